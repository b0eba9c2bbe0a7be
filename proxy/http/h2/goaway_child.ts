/** Drives the child server of testing_goaway_server.ts for the GOAWAY crash test and check. */
import { connectClient } from "./testing.ts";

export { connectClient };

const MESSAGE = new Uint8Array(69);

export async function startChild(mode: "guarded" | "bare") {
  const proc = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("./testing_goaway_server.ts", import.meta.url).pathname, mode],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const reader = proc.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  while (!buf.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("child exited early");
    buf += value;
  }
  reader.releaseLock();
  const stderr = new Response(proc.stderr).text();
  return { port: JSON.parse(buf.split("\n")[0]).port as number, proc, stderr };
}

/** 300 requests on one connection, then the client closes it with GOAWAY, as grpc-js does. */
export async function useAndGoaway(port: number): Promise<void> {
  const s = await connectClient(port);
  for (let i = 0; i < 300; i++) {
    await new Promise<void>((resolve) => {
      const r = s.request({ ":method": "POST", ":path": "/", "content-type": "application/grpc" });
      r.on("error", () => {});
      r.resume();
      r.end(MESSAGE);
      r.on("close", () => resolve());
    });
  }
  s.destroy();
  await new Promise((r) => setTimeout(r, 300));
}

export async function alive(proc: Deno.ChildProcess): Promise<boolean> {
  const st = await Promise.race([proc.status, new Promise<null>((r) => setTimeout(() => r(null), 700))]);
  return st === null;
}
