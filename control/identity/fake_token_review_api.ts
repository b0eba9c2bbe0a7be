/**
 * A stand-in Kubernetes API server for tests and the bench: answers
 * `POST /apis/authentication.k8s.io/v1/tokenreviews` over HTTP on 127.0.0.1 after a set latency,
 * so KubeTokenReviewer and @kubernetes/client-node run for real over sockets. Counts reviews and
 * the most it had in flight at once (the load a flood put on "the API server").
 */
import { KubeConfig } from "@kubernetes/client-node";

export interface ReviewStatus {
  authenticated: boolean;
  user?: { username: string };
  audiences?: string[];
  error?: string;
}

export interface FakeTokenReviewApi {
  kc: KubeConfig;
  reviews: number;
  maxInFlight: number;
  close(): Promise<void>;
}

export function serveTokenReviewApi(opts: {
  latencyMs: number;
  answer: (token: string, audiences: string[]) => ReviewStatus;
}): FakeTokenReviewApi {
  const ctrl = new AbortController();
  let inFlight = 0;
  const api = { reviews: 0, maxInFlight: 0 };
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: ctrl.signal, onListen: () => {} },
    async (req) => {
      const url = new URL(req.url);
      if (req.method !== "POST" || url.pathname !== "/apis/authentication.k8s.io/v1/tokenreviews") {
        return new Response("not found", { status: 404 });
      }
      inFlight++;
      api.maxInFlight = Math.max(api.maxInFlight, inFlight);
      try {
        const body = await req.json();
        const spec = body?.spec ?? {};
        await new Promise((r) => setTimeout(r, opts.latencyMs));
        api.reviews++;
        const status = opts.answer(String(spec.token ?? ""), spec.audiences ?? []);
        return Response.json({
          apiVersion: "authentication.k8s.io/v1",
          kind: "TokenReview",
          metadata: { creationTimestamp: null },
          spec,
          status,
        }, { status: 201 });
      } finally {
        inFlight--;
      }
    },
  );
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "c", server: `http://127.0.0.1:${server.addr.port}`, skipTLSVerify: true }],
    users: [{ name: "identity", token: "identity-sa-token" }],
    contexts: [{ name: "x", cluster: "c", user: "identity" }],
    currentContext: "x",
  });
  return {
    kc,
    get reviews() {
      return api.reviews;
    },
    get maxInFlight() {
      return api.maxInFlight;
    },
    close: async () => {
      ctrl.abort();
      await server.finished;
    },
  };
}
