/** `weft <command> [args]`: finds the command in the table and runs it; `weft help` lists the table. */
import type { CliContext, Command } from "./context.ts";
import { UsageError } from "./context.ts";

export function usage(commands: readonly Command[]): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  const lines = commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`);
  return `usage: weft <command> [flags]   (deno task weft <command> …)\n\ncommands:\n${
    lines.join("\n")
  }\n\nweft <command> --help shows a command's flags; docs/cli.md has them all.`;
}

export function findCommand(commands: readonly Command[], name: string): Command | undefined {
  return commands.find((c) => c.name === name || (c.aliases ?? []).includes(name));
}

export async function dispatch(
  commands: readonly Command[],
  args: string[],
  ctx: CliContext,
): Promise<number> {
  const [name, ...rest] = args;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    const which = name === "help" && rest[0] ? findCommand(commands, rest[0]) : undefined;
    if (which) return await dispatch(commands, [which.name, "--help"], ctx);
    await ctx.out(usage(commands) + "\n");
    return name === undefined ? 2 : 0;
  }
  const cmd = findCommand(commands, name);
  if (!cmd) {
    ctx.err(`weft: unknown command "${name}"\n\n${usage(commands)}`);
    return 2;
  }
  try {
    return await cmd.run(rest, ctx);
  } catch (e) {
    if (e instanceof UsageError) {
      ctx.err(`weft ${cmd.name}: ${e.message} (weft ${cmd.name} --help)`);
      return 2;
    }
    if (ctx.signal.aborted) return 130;
    ctx.err(`weft ${cmd.name}: ${(e as Error).message}`);
    return 1;
  }
}
