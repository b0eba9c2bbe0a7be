/**
 * Test helpers: CA material, issuers and CSRs (good and deliberately broken ones), and the
 * CertifyService settings the identity tests share.
 */
import { createIssuer, createTrustAnchor, P256 } from "../certs/pki.ts";
import { Issuer, type IssuerMaterial, TrustAnchors } from "./issuer.ts";
import { x509 } from "../../proto/support/x509.ts";
import { IDENTITY_TOKEN_AUDIENCE } from "../../proto/identity_name.ts";
import type { CertifyConfig } from "./service.ts";
import { DEFAULT_TOKEN_MAX_BYTES, type TokenScreen, tokenScreen } from "./token_screen.ts";

const DAY = 86_400_000;

/** Linkerd's defaults: a day's certificates, 20 s of clock skew, control plane "linkerd". */
export const TEST_CERTIFY_CONFIG: CertifyConfig = {
  controlPlaneNamespace: "linkerd",
  trustDomain: "cluster.local",
  lifetimeMs: DAY,
  clockSkewMs: 20_000,
};

/** The production token screen for `audience`, with the test config's skew. */
export function testTokenScreen(audience: string = IDENTITY_TOKEN_AUDIENCE): TokenScreen {
  return tokenScreen({ audiences: [audience], skewMs: 20_000, maxBytes: DEFAULT_TOKEN_MAX_BYTES });
}

export interface TestCa {
  anchorPem: string;
  anchorKeyPem: string;
  anchors: TrustAnchors;
  material: IssuerMaterial;
  issuer: Issuer;
}

export async function makeCa(
  now = Date.now(),
  opts: { anchorCn?: string; issuerCn?: string; issuerLifetimeMs?: number } = {},
): Promise<TestCa> {
  const root = await createTrustAnchor({
    commonName: opts.anchorCn ?? "root.linkerd.cluster.local",
    lifetimeMs: 365 * DAY,
    now: now - DAY,
  });
  const anchors = TrustAnchors.parse(root.certPem);
  const material = await newIssuerMaterial(root, now, opts.issuerCn, opts.issuerLifetimeMs);
  return {
    anchorPem: root.certPem,
    anchorKeyPem: root.keyPem,
    anchors,
    material,
    issuer: await Issuer.load(material, anchors, now),
  };
}

export async function newIssuerMaterial(
  root: { certPem: string; keyPem: string },
  now = Date.now(),
  cn = "identity.linkerd.cluster.local",
  lifetimeMs = 30 * DAY,
): Promise<IssuerMaterial> {
  const iss = await createIssuer(root, { commonName: cn, lifetimeMs, now: now - 60_000 });
  return { certPem: iss.certPem, keyPem: iss.keyPem, origin: `test ${cn}` };
}

export interface CsrOptions {
  cn?: string;
  names?: x509.JsonGeneralName[];
  keyAlg?: RsaHashedKeyGenParams | EcKeyGenParams;
  signAlg?: Algorithm;
}

export async function makeCsr(opts: CsrOptions): Promise<{ der: Uint8Array; keys: CryptoKeyPair }> {
  const keyAlg = opts.keyAlg ?? P256;
  const keys = await crypto.subtle.generateKey(keyAlg, true, ["sign", "verify"]) as CryptoKeyPair;
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: opts.cn === undefined ? "" : `CN=${opts.cn}`,
    keys,
    signingAlgorithm: opts.signAlg ??
      (keyAlg.name === "ECDSA" ? P256 : { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }),
    extensions: opts.names ? [new x509.SubjectAlternativeNameExtension(opts.names)] : [],
  });
  return { der: new Uint8Array(csr.rawData), keys };
}

/** A well-formed CSR for `name` (CN and one DNS SAN), as proxies send. */
export function csrFor(name: string): Promise<{ der: Uint8Array; keys: CryptoKeyPair }> {
  return makeCsr({ cn: name, names: [{ type: "dns", value: name }] });
}

export function identityOf(sa: string, ns: string): string {
  return `${sa}.${ns}.serviceaccount.identity.linkerd.cluster.local`;
}
