/**
 * One hostile client for tests and the bench: `concurrency` Certify calls at a time, as fast as
 * answers come back, spread over `connections` gRPC connections (a server bounds the streams of
 * one connection, a pod can open many), each carrying junk or a foreign token (not a JWT,
 * another audience, expired, or well-formed and claiming the flooder's own ServiceAccount but
 * refused by the TokenReview), or a junk CSR. Half the calls send only what the cheap checks
 * refuse (they never wait, so they come at the highest rate), the other half mix in tokens that
 * need a TokenReview. Bounded by `maxCalls` and by `signal`.
 */
import * as grpc from "@grpc/grpc-js";
import { IdentityClient } from "../../proto/gen/identity.ts";
import { csrFor, identityOf } from "./test_pki.ts";
import { fakeJwt, serviceAccountJwt } from "./test_tokens.ts";

export interface FloodOptions {
  port: number;
  concurrency: number;
  connections: number;
  maxCalls: number;
}

export interface FloodResult {
  calls: number;
  /** gRPC status name → count; "OK" would mean the flooder got a certificate. */
  byCode: Record<string, number>;
  /** Metric-style reason prefix of each refusal message → count (for the report). */
  byProblem: Record<string, number>;
}

export const FLOOD_NAMESPACE = "evil";
export const FLOOD_SERVICE_ACCOUNT = "flooder";

function problemOf(details: string): string {
  const m =
    /: (token is not a JWT|token audience|token expired|TokenReview refused|token is not authenticated|CSR is not valid DER|TokenReview throttled|token "exp" is not a number)/
      .exec(details);
  return m ? m[1] : details.slice(0, 60);
}

/** `onStart` runs once the flooder is ready and its first calls are going out. */
export async function flood(
  opts: FloodOptions,
  signal: AbortSignal,
  onStart: () => void = () => {},
): Promise<FloodResult> {
  const identity = identityOf(FLOOD_SERVICE_ACCOUNT, FLOOD_NAMESPACE);
  const csr = (await csrFor(identity)).der;
  const junkCsr = crypto.getRandomValues(new Uint8Array(300));
  // A local subchannel pool per client: otherwise grpc-js shares one connection between them.
  const clients = Array.from(
    { length: opts.connections },
    () =>
      new IdentityClient(`127.0.0.1:${opts.port}`, grpc.credentials.createInsecure(), {
        "grpc.use_local_subchannel_pool": 1,
      }),
  );
  const enc = new TextEncoder();
  const now = () => Date.now();
  const cheap: (() => { token: string; csr: Uint8Array })[] = [
    () => ({ token: btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(600)))), csr }),
    () => ({
      token: serviceAccountJwt(FLOOD_NAMESPACE, FLOOD_SERVICE_ACCOUNT, {
        aud: ["https://kubernetes.default.svc"],
      }),
      csr,
    }),
    () => ({
      token: serviceAccountJwt(FLOOD_NAMESPACE, FLOOD_SERVICE_ACCOUNT, {
        exp: Math.floor(now() / 1000) - 600,
      }, now() - 3_600_000),
      csr,
    }),
    () => ({ token: serviceAccountJwt(FLOOD_NAMESPACE, FLOOD_SERVICE_ACCOUNT), csr: junkCsr }),
    () => ({ token: fakeJwt({ aud: "identity.l5d.io", exp: "never" }), csr }),
  ];
  // Valid-looking and unique (no sharing of reviews): each costs a TokenReview, which refuses it.
  const reviewed = () => ({ token: serviceAccountJwt(FLOOD_NAMESPACE, FLOOD_SERVICE_ACCOUNT), csr });
  const mixed = [...cheap, reviewed, reviewed, reviewed];
  const result: FloodResult = { calls: 0, byCode: {}, byProblem: {} };
  const one = (client: IdentityClient, kinds: typeof cheap, i: number) =>
    new Promise<void>((resolve) => {
      const { token, csr } = kinds[i % kinds.length]();
      client.certify(
        { identity, token: enc.encode(token), certificateSigningRequest: csr },
        new grpc.Metadata(),
        { deadline: Date.now() + 30_000 },
        (err) => {
          const code = err ? grpc.status[err.code] : "OK";
          result.byCode[code] = (result.byCode[code] ?? 0) + 1;
          if (err) {
            const p = problemOf(err.details);
            result.byProblem[p] = (result.byProblem[p] ?? 0) + 1;
          }
          resolve();
        },
      );
    });
  onStart();
  await Promise.all(Array.from({ length: opts.concurrency }, async (_, loop) => {
    const client = clients[loop % clients.length];
    const kinds = loop % 2 === 0 ? cheap : mixed;
    while (!signal.aborted && result.calls < opts.maxCalls) {
      await one(client, kinds, result.calls++);
    }
  }));
  for (const c of clients) c.close();
  return result;
}
