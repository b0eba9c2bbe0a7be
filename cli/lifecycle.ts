/**
 * `weft check | deploy | undeploy | inject`: the existing tools (manifests/main.ts and the injector's
 * offline CLI) reached from the one `weft` command; their flags and output are unchanged.
 */
import { runCli as runInject } from "../control/injector/cli.ts";
import { main as manifestsMain } from "../manifests/main.ts";
import type { Command } from "./context.ts";

export const lifecycleCommands: readonly Command[] = [
  {
    name: "check",
    aliases: ["mesh:check"],
    summary: "health of the control plane, webhooks, certificates and proxies (deno task mesh:check)",
    run: (args) => manifestsMain(["check", ...args]),
  },
  {
    name: "deploy",
    summary: "build and load the image, install or upgrade the control plane (deno task deploy)",
    run: (args) => manifestsMain(["deploy", ...args]),
  },
  {
    name: "undeploy",
    summary: "remove the control plane, webhooks, cluster RBAC and CRDs (deno task undeploy)",
    run: (args) => manifestsMain(["undeploy", ...args]),
  },
  {
    name: "render",
    summary: "print the rendered control plane as YAML (Secrets redacted)",
    run: (args) => manifestsMain(["render", ...args]),
  },
  {
    name: "inject",
    summary: "inject the proxy into Kubernetes YAML offline: weft inject FILE|- (deno task inject)",
    run: (args, ctx) =>
      runInject(args, ctx.env, {
        readInput: (path) => path === "-" ? ctx.readStdin() : ctx.readFile(path),
        stdout: (t) => ctx.out(t),
        stderr: (l) => ctx.err(l),
      }),
  },
];
