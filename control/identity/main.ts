/**
 * `deno run -A control/main.ts identity [flags]`: the identity controller. Reads its flags and
 * environment here only, then wires the Kubernetes-backed parts (TokenReview, the issuer Secret,
 * the trust-anchor ConfigMap) into the transport-free service.
 */
import { AuthorizationV1Api, CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { serveAdmin } from "../admin/admin_server.ts";
import { KubeApiSource, loadKubeConfig, Resources } from "../k8s/mod.ts";
import { systemClock } from "../../proto/support/clock.ts";
import { type IdentityConfig, parseIdentityConfig } from "./config.ts";
import { serveIdentityGrpc } from "./grpc_server.ts";
import { IssuerError, TrustAnchors } from "./issuer.ts";
import { IssuerReloader } from "./issuer_reloader.ts";
import {
  DirectoryIssuerSource,
  type IssuerSource,
  SecretIssuerSource,
  type SecretObject,
} from "./issuer_source.ts";
import { IdentityMetrics } from "./metrics.ts";
import { CertifyService } from "./service.ts";
import { KubeTokenReviewer } from "./token_review.ts";
import { TokenValidator } from "./token_validator.ts";
import { DEFAULT_TOKEN_MAX_BYTES, tokenScreen } from "./token_screen.ts";

const FIRST_ISSUER_TIMEOUT_MS = 60_000;

function log(line: string): void {
  console.log(`identity: ${line}`);
}

class StartupError extends Error {}

async function loadAnchors(config: IdentityConfig, kc: KubeConfig): Promise<TrustAnchors> {
  let pem: string | undefined;
  let origin: string;
  if (config.trustAnchorsFile) {
    origin = `file ${config.trustAnchorsFile}`;
    pem = await Deno.readTextFile(config.trustAnchorsFile).catch((e) => {
      throw new StartupError(`cannot read trust anchors from ${origin}: ${e.message}`);
    });
  } else {
    const { namespace, name, key } = config.trustAnchorsConfigMap;
    origin = `configmap ${namespace}/${name} key ${key}`;
    const cm = await kc.makeApiClient(CoreV1Api).readNamespacedConfigMap({ name, namespace }).catch((e) => {
      throw new StartupError(`cannot read trust anchors from ${origin}: ${e.message ?? e}`);
    });
    pem = cm.data?.[key];
    if (!pem) throw new StartupError(`${origin} is empty or missing`);
  }
  try {
    const anchors = TrustAnchors.parse(pem);
    log(
      `trust anchors from ${origin}: ${
        anchors.certs.map((c) => `"${c.subject}" until ${c.notAfter.toISOString()}`).join(", ")
      }`,
    );
    return anchors;
  } catch (e) {
    if (e instanceof IssuerError) throw new StartupError(`${origin}: ${e.message}`);
    throw e;
  }
}

/** Fails fast when the ServiceAccount may not create TokenReviews (every Certify would fail). */
async function checkTokenReviewAccess(kc: KubeConfig): Promise<void> {
  const res = await kc.makeApiClient(AuthorizationV1Api).createSelfSubjectAccessReview({
    body: {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SelfSubjectAccessReview",
      spec: {
        resourceAttributes: { group: "authentication.k8s.io", resource: "tokenreviews", verb: "create" },
      },
    },
  });
  if (!res.status?.allowed) {
    throw new StartupError(
      `this ServiceAccount may not create tokenreviews.authentication.k8s.io: ${
        res.status?.reason ?? "denied"
      }`,
    );
  }
}

export async function run(config: IdentityConfig, signal: AbortSignal): Promise<void> {
  const clock = systemClock;
  const registry = new Registry();
  const metrics = new IdentityMetrics(registry);
  const kc = loadKubeConfig(config.kubeconfig);
  await checkTokenReviewAccess(kc);
  const anchors = await loadAnchors(config, kc);
  const reloader = new IssuerReloader(anchors, clock, metrics, log);
  metrics.observe(() => reloader.current(), () => anchors, () => clock.now());

  const source: IssuerSource = config.issuerDir
    ? new DirectoryIssuerSource(config.issuerDir)
    : new SecretIssuerSource(
      new KubeApiSource<SecretObject>(kc, {
        ...Resources.secrets,
        namespace: config.issuerSecret.namespace,
        fieldSelector: `metadata.name=${config.issuerSecret.name}`,
      }),
      config.issuerSecret.namespace,
      config.issuerSecret.name,
      log,
    );
  const sourceDone = source.run(
    (m) => void reloader.offer(m),
    (message) => log(`issuer source: ${message}`),
    signal,
  ).catch((e) => log(`issuer source stopped: ${e.message ?? e}`));

  const admin = serveAdmin({
    hostname: config.adminHost,
    port: config.adminPort,
    registry,
    readiness: [{ name: "issuer", check: () => reloader.current() ? undefined : "issuer not loaded" }],
    signal,
  });

  // At startup a bad or missing issuer is fatal, as in Linkerd: the pod restarts visibly.
  let timer: ReturnType<typeof setTimeout> | undefined;
  const first = await Promise.race([
    reloader.first,
    new Promise<undefined>((r) => timer = setTimeout(() => r(undefined), FIRST_ISSUER_TIMEOUT_MS)),
  ]);
  clearTimeout(timer);
  if (!first) {
    throw new StartupError(
      `no issuer material from ${
        config.issuerDir
          ? `directory ${config.issuerDir}`
          : `secret ${config.issuerSecret.namespace}/${config.issuerSecret.name}`
      } within ${FIRST_ISSUER_TIMEOUT_MS / 1000}s`,
    );
  }
  if (!first.ok) throw new StartupError(first.error);

  const validator = new TokenValidator(
    new KubeTokenReviewer(kc),
    {
      audiences: config.tokenAudiences,
      rateLimit: {
        ratePerSecond: config.tokenReview.qps,
        burst: config.tokenReview.burst,
        maxQueued: config.tokenReview.maxQueued,
      },
      maxQueuedPerClient: config.tokenReview.maxQueuedPerClient,
      timeoutMs: config.tokenReview.timeoutMs,
    },
    clock,
    metrics,
  );
  const service = new CertifyService({
    config,
    issuer: () => reloader.current(),
    screenToken: tokenScreen({
      audiences: config.tokenAudiences,
      skewMs: config.clockSkewMs,
      maxBytes: DEFAULT_TOKEN_MAX_BYTES,
    }),
    validateToken: (t, client) => validator.validate(t, client),
    clock,
    metrics,
    log,
  });
  const grpcServer = await serveIdentityGrpc({ service, registry, address: config.grpcAddress, log });
  log(
    `serving Certify on ${config.grpcAddress} (port ${grpcServer.port}), admin on ${admin.addr.hostname}:${admin.addr.port}`,
  );

  await new Promise<void>((r) => signal.addEventListener("abort", () => r(), { once: true }));
  validator.close();
  await grpcServer.close();
  await Promise.all([admin.finished, sourceDone]);
}

export async function main(args: string[]): Promise<void> {
  let config: IdentityConfig;
  try {
    config = parseIdentityConfig(args, Deno.env.toObject());
  } catch (e) {
    console.error(`identity: ${(e as Error).message}`);
    Deno.exit(2);
  }
  const ctl = new AbortController();
  for (const sig of ["SIGTERM", "SIGINT"] as const) Deno.addSignalListener(sig, () => ctl.abort());
  try {
    await run(config, ctl.signal);
  } catch (e) {
    console.error(`identity: cannot start: ${(e as Error).message}`);
    Deno.exit(1);
  }
}
