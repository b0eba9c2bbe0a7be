/**
 * `deno task inject [FILE|-] [flags]`: offline injection of Kubernetes YAML with the webhook's
 * patch code; prints the injected YAML on stdout and a note on stderr for every document passed
 * through unchanged. Exit status: 0 done, 1 an invalid annotation or YAML (nothing printed, so a
 * pipe into `kubectl apply` applies nothing), 2 bad flags or unreadable input.
 *
 *   deno task inject deploy.yaml --trust-anchors-file=ca.crt | kubectl apply -f -
 *
 * Flags: see CLI_USAGE in flags.ts (the proxy flags of the injector, plus --native-sidecar).
 */
import { FlagError, parseCliArgs } from "./flags.ts";
import { readTrustAnchors, TrustAnchorsError } from "./trust_anchors.ts";
import { injectYaml } from "./yaml_inject.ts";

export interface CliIo {
  readInput(path: string): Promise<string>;
  stdout(text: string): Promise<void> | void;
  stderr(line: string): void;
}

/** Runs the CLI and returns its exit status (main() exits with it). */
export async function runCli(
  args: string[],
  env: Record<string, string | undefined>,
  io: CliIo,
): Promise<number> {
  let opts;
  let text: string;
  let anchors;
  try {
    opts = parseCliArgs(args, env);
    anchors = await readTrustAnchors(opts.trustAnchorsFile);
    text = await io.readInput(opts.input);
  } catch (e) {
    if (!(e instanceof FlagError || e instanceof TrustAnchorsError || e instanceof Deno.errors.NotFound)) {
      throw e;
    }
    io.stderr(`inject: ${(e as Error).message}`);
    return 2;
  }
  const res = await injectYaml(text, {
    ...opts.base,
    trustAnchorsPem: anchors.pem,
    nativeSidecars: opts.nativeSidecar,
  });
  for (const n of res.notes) io.stderr(`inject: ${n}`);
  if (res.errors.length > 0) {
    for (const e of res.errors) io.stderr(`inject: error: ${e}`);
    io.stderr(`inject: ${res.errors.length} error(s); nothing written`);
    return 1;
  }
  await io.stdout(res.output);
  io.stderr(`inject: ${res.injected} pod spec(s) injected`);
  return 0;
}

async function readInput(path: string): Promise<string> {
  if (path !== "-") {
    try {
      return await Deno.readTextFile(path);
    } catch (e) {
      throw new Deno.errors.NotFound(`cannot read ${path}: ${(e as Error).message}`);
    }
  }
  return await new Response(Deno.stdin.readable).text();
}

if (import.meta.main) {
  const code = await runCli(Deno.args, Deno.env.toObject(), {
    readInput,
    stdout: async (t) => {
      const w = Deno.stdout.writable.getWriter();
      await w.write(new TextEncoder().encode(t));
      w.releaseLock();
    },
    stderr: (l) => console.error(l),
  });
  Deno.exit(code);
}
