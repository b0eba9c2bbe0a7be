/**
 * The compatibility suite's cases: every document under `manifests/` carries the verdict Linkerd
 * gives it (`compat.weft.io/linkerd: accept | refuse`) and, for a refusal, text weft's message
 * must contain (`compat.weft.io/message`: the distinctive part of the message, never one bare
 * word), so a refusal for the wrong reason (a missing CRD, a typo in the case, another field) does
 * not count as agreement.
 */
import { parseAllDocuments } from "yaml";

export const VERDICT = "compat.weft.io/linkerd";
export const MESSAGE = "compat.weft.io/message";
/** Created for real before the dry runs: a case that needs an existing object (overlapping Servers). */
export const SETUP = "compat.weft.io/setup";

export interface Case {
  file: string;
  apiVersion: string;
  kind: string;
  name: string;
  verdict: "accept" | "refuse";
  /** For a refusal: text weft's message must contain (compared case-insensitively). */
  message?: string;
  setup: boolean;
  object: Record<string, unknown>;
}

/**
 * Every kind and version Linkerd serves that a user may write (from its CRDs): the suite must hold an
 * accepted case of each.
 */
export const SERVED: readonly string[] = [
  "policy.linkerd.io/v1alpha1/Server",
  "policy.linkerd.io/v1beta1/Server",
  "policy.linkerd.io/v1beta2/Server",
  "policy.linkerd.io/v1beta3/Server",
  "policy.linkerd.io/v1alpha1/ServerAuthorization",
  "policy.linkerd.io/v1beta1/ServerAuthorization",
  "policy.linkerd.io/v1alpha1/AuthorizationPolicy",
  "policy.linkerd.io/v1alpha1/MeshTLSAuthentication",
  "policy.linkerd.io/v1alpha1/NetworkAuthentication",
  "policy.linkerd.io/v1alpha1/HTTPRoute",
  "policy.linkerd.io/v1beta1/HTTPRoute",
  "policy.linkerd.io/v1beta2/HTTPRoute",
  "policy.linkerd.io/v1beta3/HTTPRoute",
  "policy.linkerd.io/v1alpha1/EgressNetwork",
  "policy.linkerd.io/v1alpha1/HTTPLocalRateLimitPolicy",
  "gateway.networking.k8s.io/v1beta1/HTTPRoute",
  "gateway.networking.k8s.io/v1/HTTPRoute",
  "gateway.networking.k8s.io/v1alpha2/GRPCRoute",
  "gateway.networking.k8s.io/v1/GRPCRoute",
  "gateway.networking.k8s.io/v1alpha2/TLSRoute",
  "gateway.networking.k8s.io/v1alpha2/TCPRoute",
  "workload.linkerd.io/v1alpha1/ExternalWorkload",
  "workload.linkerd.io/v1beta1/ExternalWorkload",
  "linkerd.io/v1alpha1/ServiceProfile",
  "linkerd.io/v1alpha2/ServiceProfile",
];

const BARE_WORD = /^[\p{L}\p{N}_.-]+$/u;

export class CaseError extends Error {
  override name = "CaseError";
}

type Doc = {
  apiVersion?: unknown;
  kind?: unknown;
  metadata?: { name?: unknown; annotations?: Record<string, unknown> };
};

/** Reads one manifest file's documents as cases; a document without a valid verdict is an error. */
export function parseCases(file: string, text: string): Case[] {
  const out: Case[] = [];
  for (const [i, d] of parseAllDocuments(text).entries()) {
    if (d.errors.length > 0) throw new CaseError(`${file} document ${i + 1}: ${d.errors[0].message}`);
    const o = d.toJS() as Doc | null;
    if (o === null) continue;
    const where = `${file} document ${i + 1}`;
    const name = o.metadata?.name;
    if (typeof o.apiVersion !== "string" || typeof o.kind !== "string" || typeof name !== "string") {
      throw new CaseError(`${where}: needs apiVersion, kind and metadata.name`);
    }
    const ann = o.metadata?.annotations ?? {};
    const verdict = ann[VERDICT];
    if (verdict !== "accept" && verdict !== "refuse") {
      throw new CaseError(
        `${where} (${o.kind} ${name}): ${VERDICT} must be accept or refuse, got ${verdict}`,
      );
    }
    const message = ann[MESSAGE];
    if (verdict === "refuse" && (typeof message !== "string" || message === "")) {
      throw new CaseError(`${where} (${o.kind} ${name}): a refusal needs ${MESSAGE}`);
    }
    // One bare word ("port", "rule") is in many refusals, so a refusal for another reason would agree.
    if (typeof message === "string" && BARE_WORD.test(message)) {
      throw new CaseError(
        `${where} (${o.kind} ${name}): ${MESSAGE} "${message}" is one bare word; ` +
          "use the distinctive part of weft's message, with the field path",
      );
    }
    out.push({
      file,
      apiVersion: o.apiVersion,
      kind: o.kind,
      name,
      verdict,
      message: typeof message === "string" ? message : undefined,
      setup: ann[SETUP] === "true",
      object: o as Record<string, unknown>,
    });
  }
  return out;
}

/** The served kind/versions with no accepted case. */
export function uncovered(cases: Case[]): string[] {
  const have = new Set(cases.filter((c) => c.verdict === "accept").map((c) => `${c.apiVersion}/${c.kind}`));
  return SERVED.filter((k) => !have.has(k));
}

export type Outcome = { ok: true } | { ok: false; message: string };

/** Whether weft's outcome for a case is Linkerd's verdict (for a refusal, for the stated reason). */
export function agrees(c: Case, outcome: Outcome): { agree: boolean; detail: string } {
  if (c.verdict === "accept") {
    return outcome.ok
      ? { agree: true, detail: "accepted" }
      : { agree: false, detail: `Linkerd accepts; weft refused: ${outcome.message}` };
  }
  if (outcome.ok) return { agree: false, detail: "Linkerd refuses; weft accepted" };
  const want = (c.message ?? "").toLowerCase();
  return outcome.message.toLowerCase().includes(want)
    ? { agree: true, detail: `refused: ${outcome.message}` }
    : { agree: false, detail: `refused, but the message does not name "${c.message}": ${outcome.message}` };
}

export async function loadCases(dir: URL): Promise<Case[]> {
  const files: string[] = [];
  for await (const e of Deno.readDir(dir)) if (e.isFile && e.name.endsWith(".yaml")) files.push(e.name);
  files.sort();
  const out: Case[] = [];
  for (const f of files) out.push(...parseCases(f, await Deno.readTextFile(new URL(f, dir))));
  return out;
}
