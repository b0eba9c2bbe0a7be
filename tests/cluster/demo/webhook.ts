// A validating admission webhook for cluster tests. It denies objects labelled `weft.test/deny=true` with a
// message naming this pod, so a test can prove the API server really called it.
// TLS material comes from files (a mounted Secret): TLS_CERT, TLS_KEY; PORT defaults to 8443.

interface AdmissionReview {
  apiVersion: string;
  kind: string;
  request?: { uid: string; object?: { metadata?: { labels?: Record<string, string> } } };
}

const port = Number(Deno.env.get("PORT") ?? "8443");
const name = Deno.env.get("POD_NAME") ?? Deno.hostname();
const cert = await Deno.readTextFile(Deno.env.get("TLS_CERT") ?? "/tls/tls.crt");
const key = await Deno.readTextFile(Deno.env.get("TLS_KEY") ?? "/tls/tls.key");

Deno.serve({ port, hostname: "0.0.0.0", cert, key }, async (req) => {
  const path = new URL(req.url).pathname;
  if (path === "/healthz") return new Response("ok\n");
  const review = await req.json() as AdmissionReview;
  const uid = review.request?.uid ?? "";
  const deny = review.request?.object?.metadata?.labels?.["weft.test/deny"] === "true";
  console.log(`review ${uid} deny=${deny}`);
  return Response.json({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    response: deny
      ? { uid, allowed: false, status: { code: 403, message: `denied by webhook ${name}` } }
      : { uid, allowed: true },
  });
});
