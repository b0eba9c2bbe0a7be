/**
 * The real identity gRPC server (control/identity/testing_server.ts) in its own process, for
 * proxy tests: proxy/ does not import control/.
 */
const SERVER = new URL("../../control/identity/testing_server.ts", import.meta.url).pathname;

export interface IdentityServer {
  port: number;
  /** The trust anchor the server's issuer chains to, PEM. */
  anchorsPem: string;
  close(): Promise<void>;
}

/** Starts the server with its files in `dir`; `tokens` are `TOKEN=NS/SA` entries. */
export async function startIdentityServer(
  dir: string,
  tokens: string[],
  lifetime: string,
): Promise<IdentityServer> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      SERVER,
      `--dir=${dir}`,
      `--lifetime=${lifetime}`,
      ...tokens.map((t) => `--token=${t}`),
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`identity test server exited: ${text}`);
    text += value;
  }
  reader.releaseLock();
  const port = JSON.parse(text.split("\n")[0]).port as number;
  return {
    port,
    anchorsPem: await Deno.readTextFile(`${dir}/ca.crt`),
    close: async () => {
      await child.stdin.close();
      await child.stdout.cancel().catch(() => {});
      await child.status;
    },
  };
}
