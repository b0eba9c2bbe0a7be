/**
 * `deno run -A control/main.ts identity [flags]`: the identity controller. Reads its flags and
 * environment here only, then wires the Kubernetes-backed parts (TokenReview, the issuer Secret,
 * the trust-anchor ConfigMap) into the transport-free service.
 */
import { AuthorizationV1Api, type KubeConfig } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { serveAdmin } from "../admin/admin_server.ts";
import { KubeApiSource, kubeLeaderElector, loadKubeConfig, Resources } from "../k8s/mod.ts";
import { LeaderLeases } from "../../proto/control_plane.ts";
import { systemClock } from "../../proto/support/clock.ts";
import { type IdentityConfig, parseIdentityConfig } from "./config.ts";
import { serveIdentityGrpc } from "./grpc_server.ts";
import { IssuerError, TrustAnchors } from "./issuer.ts";
import { IssuerReloader } from "./issuer_reloader.ts";
import { ConfigMapAnchorsSource, type ConfigMapObject } from "./trust_anchors_source.ts";
import { KubeTrustRootsClient } from "./trust_roots_client.ts";
import { TrustRootsPublisher } from "./trust_roots_publisher.ts";
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

function describeAnchors(anchors: TrustAnchors): string {
  return anchors.certs.map((c) => `"${c.subject}" until ${c.notAfter.toISOString()}`).join(", ");
}

async function loadAnchorsFile(path: string): Promise<TrustAnchors> {
  const origin = `file ${path}`;
  const pem = await Deno.readTextFile(path).catch((e) => {
    throw new StartupError(`cannot read trust anchors from ${origin}: ${e.message}`);
  });
  try {
    const anchors = TrustAnchors.parse(pem);
    log(`trust anchors from ${origin} (read once): ${describeAnchors(anchors)}`);
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
  const { namespace: cmNs, name: cmName, key: cmKey } = config.trustAnchorsConfigMap;
  // Of the replicas only the trust-roots Lease's holder publishes; the others follow the same issuer
  // and anchors and publish on taking over (issue 19, docs/ha.md).
  const elector = config.trustAnchorsFile ? undefined : kubeLeaderElector({
    kc,
    namespace: cmNs,
    lease: LeaderLeases.identityTrustRoots,
    identity: config.podName || Deno.hostname(),
    registry,
    log,
  });
  const publisher = config.trustAnchorsFile ? undefined : new TrustRootsPublisher({
    client: new KubeTrustRootsClient(kc, cmNs, cmName),
    clock,
    clockSkewMs: config.clockSkewMs,
    what: `configmap ${cmNs}/${cmName}`,
    log,
    metrics,
    canWrite: () => elector?.isLeader() ?? false,
  });
  elector?.onChange((leading) => leading && publisher?.kick());
  const electing = elector?.start(signal);
  // The anchors: from the file once, or from the ConfigMap, watched (the first bundle decides startup).
  const live: { reloader?: IssuerReloader; anchors?: TrustAnchors } = {};
  let resolveAnchors!: (a: TrustAnchors | string) => void;
  const firstAnchors = new Promise<TrustAnchors | string>((r) => resolveAnchors = r);
  let anchorsDone: Promise<unknown> = Promise.resolve();
  if (config.trustAnchorsFile) resolveAnchors(await loadAnchorsFile(config.trustAnchorsFile));
  else {
    anchorsDone = new ConfigMapAnchorsSource(
      new KubeApiSource<ConfigMapObject>(kc, {
        group: "",
        version: "v1",
        plural: "configmaps",
        namespace: cmNs,
        fieldSelector: `metadata.name=${cmName}`,
      }),
      cmNs,
      cmName,
      cmKey,
      log,
    ).run({
      onAnchors: (anchors, origin) => {
        metrics.trustBundleReloads.inc({ result: "ok" });
        log(`trust anchors from ${origin}: ${describeAnchors(anchors)}`);
        live.anchors = anchors;
        resolveAnchors(anchors);
        void live.reloader?.setAnchors(anchors).then(() => publisher?.kick());
      },
      onError: (message) => {
        metrics.trustBundleReloads.inc({ result: "error" });
        log(`TrustAnchorsRefused: ${message}`);
        resolveAnchors(message);
      },
      onConfigMap: () => publisher?.kick(),
    }, signal).catch((e) => log(`trust anchors source stopped: ${e.message ?? e}`));
  }
  let anchorsTimer: ReturnType<typeof setTimeout> | undefined;
  const anchors = await Promise.race([
    firstAnchors,
    new Promise<string>((r) =>
      anchorsTimer = setTimeout(
        () => r(`no trust anchors within ${FIRST_ISSUER_TIMEOUT_MS / 1000}s`),
        FIRST_ISSUER_TIMEOUT_MS,
      )
    ),
  ]);
  clearTimeout(anchorsTimer);
  if (typeof anchors === "string") throw new StartupError(anchors);
  const reloader = new IssuerReloader(anchors, clock, metrics, log);
  live.reloader = reloader;
  // A bundle that arrived while the reloader was being made.
  if (live.anchors && live.anchors !== anchors) void reloader.setAnchors(live.anchors);
  metrics.observe(reloader, () => clock.now());
  // Publishing never blocks the reloader: the publisher only marks work and writes on its own.
  reloader.onIssuer((issuer, info) => publisher?.setIssuer(issuer.chainCertificates, info.fingerprint));

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
  publisher?.stop();
  await Promise.all([admin.finished, sourceDone, anchorsDone, electing]);
}

export async function main(args: string[]): Promise<void> {
  let config: IdentityConfig;
  try {
    config = { ...parseIdentityConfig(args, Deno.env.toObject()), podName: Deno.env.get("POD_NAME") };
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
