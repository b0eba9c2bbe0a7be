/**
 * The table of `weft` subcommands. A new subcommand is one entry here (its code in its own file under
 * cli/ or in the part it belongs to); `weft help` and the dispatcher read only this table.
 */
import type { Command } from "./context.ts";
import { lifecycleCommands } from "./lifecycle.ts";
import { edgesCommand } from "./edges.ts";
import { resourcesCommand } from "./resources.ts";
import { routesCommand } from "./routes.ts";
import { statCommand } from "./stat.ts";
import { tapCommand } from "./tap.ts";
import { topCommand } from "./top.ts";
import { diagnosticsCommand } from "./diagnostics/command.ts";
import { dashboardCommand } from "./dashboard.ts";
import { uninjectCommand } from "./uninject.ts";
import { restartProxiesCommand } from "./restart_proxies.ts";
import { multiclusterCommand } from "./multicluster.ts";

export const COMMANDS: readonly Command[] = [
  ...lifecycleCommands,
  statCommand,
  topCommand,
  routesCommand,
  edgesCommand,
  resourcesCommand,
  tapCommand,
  diagnosticsCommand,
  uninjectCommand,
  restartProxiesCommand,
  multiclusterCommand,
  dashboardCommand,
];
