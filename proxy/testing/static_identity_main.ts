/**
 * Test entry point: the real proxy (proxy/main.ts) with an identity starter that loads a
 * certificate the test issued, from the JSON file named by WEFT_TEST_CREDENTIALS_FILE, instead of
 * calling Identity.Certify. Used by the data-path tests while they exercise everything but the
 * identity client.
 */
import { Gauge } from "../metrics/instruments.ts";
import { main } from "../main.ts";
import type { TlsCredentials } from "../core/cert_store.ts";

await main(Deno.args, ({ store, registry, log }) => {
  // The real client exports this gauge; the stand-in does too, so /metrics looks the same.
  new Gauge({
    name: "identity_cert_expiration_timestamp_seconds",
    help: "Expiry of the proxy's current certificate, Unix seconds.",
    registers: [registry],
    collect() {
      const c = store.current();
      if (c) this.set(c.expiresAt.getTime() / 1000);
    },
  });
  const file = Deno.env.get("WEFT_TEST_CREDENTIALS_FILE");
  if (!file) throw new Error("WEFT_TEST_CREDENTIALS_FILE is not set");
  const raw = JSON.parse(Deno.readTextFileSync(file));
  const creds: TlsCredentials = { ...raw, expiresAt: new Date(raw.expiresAt) };
  // Certify asynchronously, as the real client would, so /ready is observed turning ready.
  setTimeout(() => {
    store.set(creds);
    log("info", `test identity loaded for ${creds.localName}`);
  }, Number(Deno.env.get("WEFT_TEST_CERTIFY_DELAY_MS") ?? "0"));
  return Promise.resolve();
});
