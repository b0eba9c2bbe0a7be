/**
 * `weft <command>`: the operator's CLI (`deno task weft …`, or installed as one command:
 * `deno install -g -A -n weft cli/main.ts` / `deno compile -A -o weft cli/main.ts`). The only module
 * of cli/ that reads the environment, the arguments and the terminal.
 */
import { COMMANDS } from "./commands.ts";
import type { CliContext } from "./context.ts";
import { dispatch } from "./dispatch.ts";
import { statusLine } from "./status_line.ts";

function context(): CliContext {
  const enc = new TextEncoder();
  const stderrIsTty = Deno.stderr.isTerminal();
  const ac = new AbortController();
  const onInt = () => {
    if (ac.signal.aborted) Deno.exit(130);
    ac.abort(new Error("interrupted"));
  };
  Deno.addSignalListener("SIGINT", onInt);
  const env = Deno.env.toObject();
  const stderr = statusLine((t) => Deno.stderr.writeSync(enc.encode(t)), stderrIsTty, env);
  return {
    env,
    out: async (t) => {
      const data = enc.encode(t);
      let off = 0;
      while (off < data.length) off += await Deno.stdout.write(data.subarray(off));
    },
    err: stderr.err,
    status: stderr.status,
    stdoutIsTty: Deno.stdout.isTerminal(),
    stderrIsTty,
    signal: ac.signal,
    readStdin: () => new Response(Deno.stdin.readable).text(),
    readFile: async (p) => {
      try {
        return await Deno.readTextFile(p);
      } catch (e) {
        throw new Deno.errors.NotFound(`cannot read ${p}: ${(e as Error).message}`);
      }
    },
  };
}

if (import.meta.main) {
  const code = await dispatch(COMMANDS, Deno.args, context());
  Deno.exit(code);
}
