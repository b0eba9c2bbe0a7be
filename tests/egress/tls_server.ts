/**
 * The stand-in "external" TLS server of the egress test, run inside its own network namespace:
 * `tls_server.ts <port> <credentials.json>` answers each connection with `tls sni=<SNI>\n`, then
 * echoes. The SNI it reports is what the client asked for, so the test sees that the proxy passed
 * the TLS stream through untouched.
 */
import * as tls from "node:tls";

const [port, credsFile] = Deno.args;
const creds = JSON.parse(Deno.readTextFileSync(credsFile)) as { keyPem: string; certChainPem: string };
tls.createServer({ key: creds.keyPem, cert: creds.certChainPem }, (s) => {
  s.on("error", () => s.destroy());
  s.write(`tls sni=${(s as unknown as { servername?: string }).servername ?? ""}\n`);
  s.pipe(s);
}).listen(Number(port), "0.0.0.0", () => console.log("listening"));
