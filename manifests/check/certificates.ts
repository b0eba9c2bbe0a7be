/**
 * The `certificates` checks: the identity trust anchors and issuer, and the webhooks' CA, serving
 * certificates and caBundles; a certificate expiring within the threshold fails.
 */
import { checkExpiry } from "../../control/certs/expiry_check.ts";
import { formatDuration } from "../../proto/go_duration.ts";
import { TrustAnchors } from "../../control/identity/issuer.ts";
import { certProblems, serviceDnsNames } from "../certs.ts";
import { type Manifest, objectPath } from "../kinds.ts";
import {
  CLUSTER_DOMAIN,
  ISSUER_SECRET,
  NAMESPACE,
  TRUST_ROOTS_CONFIGMAP,
  TRUST_ROOTS_KEY,
  WEBHOOK_CA_SECRET,
  WEBHOOK_CERTS,
} from "../render.ts";
import { type Obj, secretPair, unb64 } from "./objects.ts";
import { type CheckContext, type CheckResult, result } from "./result.ts";

const GROUP = "certificates";

export async function checkIdentityIssuer(ctx: CheckContext): Promise<CheckResult> {
  const name = "trust anchors + issuer";
  const cm = await ctx.kube.get<Obj>(`/api/v1/namespaces/${NAMESPACE}/configmaps/${TRUST_ROOTS_CONFIGMAP}`);
  const sec = await ctx.kube.get<Obj>(`/api/v1/namespaces/${NAMESPACE}/secrets/${ISSUER_SECRET}`);
  const anchorsPem = cm?.data?.[TRUST_ROOTS_KEY];
  const issuer = secretPair(sec, "crt.pem", "key.pem") ?? secretPair(sec, "tls.crt", "tls.key");
  if (!anchorsPem || !issuer) {
    return result(GROUP, name, "fail", `${!anchorsPem ? TRUST_ROOTS_CONFIGMAP : ISSUER_SECRET} missing`);
  }
  const report = await checkExpiry({
    anchors: TrustAnchors.parse(anchorsPem),
    issuerPem: issuer.certPem,
    issuerKeyPem: issuer.keyPem,
    thresholdMs: ctx.anchorThresholdMs ?? ctx.thresholdMs,
    issuerThresholdMs: ctx.issuerThresholdMs ?? ctx.thresholdMs,
    now: ctx.now,
  });
  return result(
    GROUP,
    name,
    report.code === 0 ? "ok" : "fail",
    report.code === 0
      ? `${
        report.lines.filter((l) => !l.startsWith("issuer chains")).map((l) =>
          l.replace(/ \(serial [^)]*\)/, "")
        )
          .join("; ")
      }; chain and key ok`
      : report.lines.filter((l) => /^(WARNING|ERROR)/.test(l)).join("; "),
  );
}

/** `controlPlane`: the rendered control-plane objects, whose webhook configurations are compared. */
export async function checkWebhookCertificates(
  ctx: CheckContext,
  controlPlane: Manifest[],
): Promise<CheckResult> {
  const name = "webhook certificates";
  const get = (n: string) => ctx.kube.get<Obj>(`/api/v1/namespaces/${NAMESPACE}/secrets/${n}`);
  const ca = secretPair(await get(WEBHOOK_CA_SECRET), "tls.crt", "tls.key");
  if (!ca) return result(GROUP, name, "fail", `${WEBHOOK_CA_SECRET} missing`);
  const problems = await certProblems({
    pair: ca,
    what: "webhook CA",
    now: ctx.now,
    renewBeforeMs: ctx.thresholdMs,
    ca: true,
  });
  for (const w of WEBHOOK_CERTS) {
    const p = secretPair(await get(w.secret), "tls.crt", "tls.key");
    if (!p) problems.push(`${w.secret} missing`);
    else {
      problems.push(
        ...await certProblems({
          pair: p,
          what: w.secret,
          now: ctx.now,
          renewBeforeMs: ctx.thresholdMs,
          caPem: ca.certPem,
          dnsNames: serviceDnsNames([...w.services], NAMESPACE, CLUSTER_DOMAIN),
        }),
      );
    }
  }
  for (const d of controlPlane.filter((x) => x.kind.endsWith("WebhookConfiguration"))) {
    const live = await ctx.kube.get<Obj>(objectPath(d));
    if (!live) {
      problems.push(`${d.kind} ${d.metadata.name} missing`);
      continue;
    }
    for (const w of live.webhooks ?? []) {
      const bundle = w.clientConfig?.caBundle ? unb64(w.clientConfig.caBundle) : "";
      if (!bundle.includes(ca.certPem.trim())) problems.push(`${w.name}: caBundle is not the webhook CA`);
    }
  }
  return result(
    GROUP,
    name,
    problems.length ? "fail" : "ok",
    problems.length
      ? problems.join("; ")
      : `CA and ${WEBHOOK_CERTS.length} serving certificates valid for more than ${
        formatDuration(ctx.thresholdMs)
      }, caBundles match`,
  );
}
