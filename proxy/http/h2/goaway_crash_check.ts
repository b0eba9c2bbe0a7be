/**
 * Evidence for goaway_guard.ts (a script, not a test: the crash is likely, not certain, per
 * connection). For a bare node:http2 server and for serveHttp2, each in a child process: up to
 * `--rounds` connections of 300 requests closed by the client with GOAWAY; prints how many
 * rounds each survived, then one JSON object.
 *
 *   npx --yes deno@2.9.6 run -A proxy/http/h2/goaway_crash_check.ts [--rounds=5]
 */
import { alive, startChild, useAndGoaway } from "./goaway_child.ts";

const rounds = Number(Deno.args.find((a) => a.startsWith("--rounds="))?.split("=")[1] ?? 5);
const result: Record<string, number | string> = { deno: Deno.version.deno, rounds };
for (const mode of ["bare", "guarded"] as const) {
  const child = await startChild(mode);
  let survived = 0;
  for (let r = 0; r < rounds; r++) {
    await useAndGoaway(child.port).catch(() => {});
    if (!(await alive(child.proc))) break;
    survived++;
  }
  try {
    child.proc.kill("SIGKILL");
  } catch { /* already gone */ }
  const status = await child.proc.status;
  const stderr = (await child.stderr).trim().split("\n").pop() ?? "";
  console.log(`${mode}: survived ${survived}/${rounds}${survived < rounds ? `, died with: ${stderr}` : ""}`);
  result[`${mode}_survived`] = survived;
  if (survived < rounds) result[`${mode}_signal`] = status.signal ?? String(status.code);
}
console.log(JSON.stringify(result));
