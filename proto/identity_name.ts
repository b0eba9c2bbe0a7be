/**
 * The workload identity name format shared by identity (which issues it), destination (which
 * advertises it for endpoints), the proxy (which presents and verifies it) and the injector
 * (which configures it): `<name>.<ns>.<kind>.identity.<control-plane-ns>.<trust-domain>`.
 */

export interface WorkloadIdentity {
  /** ServiceAccount name. */
  serviceAccount: string;
  namespace: string;
  controlPlaneNamespace: string;
  /** One or more DNS labels, e.g. `cluster.local`. */
  trustDomain: string;
}

const KIND = "serviceaccount";
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** Why `label` is not a DNS-1123 label, or undefined when it is one. */
export function dnsLabelProblem(label: string): string | undefined {
  if (label.length === 0) return "is empty";
  if (label.length > 63) return `is ${label.length} characters long, want at most 63`;
  if (!DNS_LABEL.test(label)) {
    return "must consist of lower-case letters, digits and '-', starting and ending with a letter or digit";
  }
  return undefined;
}

function checkLabels(what: string, value: string): void {
  for (const label of value.split(".")) {
    const problem = dnsLabelProblem(label);
    if (problem) throw new IdentityNameError(`${what} "${value}": label "${label}" ${problem}`);
  }
}

export class IdentityNameError extends Error {
  override name = "IdentityNameError";
}

/** Formats the identity of a ServiceAccount; throws IdentityNameError naming the bad part. */
export function formatWorkloadIdentity(id: WorkloadIdentity): string {
  checkLabels("service account", id.serviceAccount);
  if (id.serviceAccount.includes(".")) {
    throw new IdentityNameError(`service account "${id.serviceAccount}" must be a single DNS label`);
  }
  checkLabels("namespace", id.namespace);
  if (id.namespace.includes(".")) {
    throw new IdentityNameError(`namespace "${id.namespace}" must be a single DNS label`);
  }
  checkLabels("control-plane namespace", id.controlPlaneNamespace);
  checkLabels("trust domain", id.trustDomain);
  const name =
    `${id.serviceAccount}.${id.namespace}.${KIND}.identity.${id.controlPlaneNamespace}.${id.trustDomain}`;
  if (name.length > 253) throw new IdentityNameError(`identity "${name}" is longer than 253 characters`);
  return name;
}

/**
 * Parses an identity name against the expected control-plane namespace and trust domain, so a
 * name minted for another mesh is never mistaken for one of ours.
 */
export function parseWorkloadIdentity(
  name: string,
  controlPlaneNamespace: string,
  trustDomain: string,
): WorkloadIdentity {
  const suffix = `.${KIND}.identity.${controlPlaneNamespace}.${trustDomain}`;
  if (!name.endsWith(suffix)) {
    throw new IdentityNameError(`identity "${name}" does not end with "${suffix}"`);
  }
  const head = name.slice(0, -suffix.length).split(".");
  if (head.length !== 2) {
    throw new IdentityNameError(
      `identity "${name}" must start with "<serviceaccount>.<namespace>", got ${head.length} labels`,
    );
  }
  const id = { serviceAccount: head[0], namespace: head[1], controlPlaneNamespace, trustDomain };
  formatWorkloadIdentity(id);
  return id;
}

/** The Kubernetes username that a TokenReview returns for a ServiceAccount token. */
export function serviceAccountUsername(namespace: string, serviceAccount: string): string {
  return `system:serviceaccount:${namespace}:${serviceAccount}`;
}

/** Splits a TokenReview username into namespace and ServiceAccount, or undefined for other users. */
export function parseServiceAccountUsername(
  username: string,
): { namespace: string; serviceAccount: string } | undefined {
  const parts = username.split(":");
  if (parts.length !== 4 || parts[0] !== "system" || parts[1] !== KIND) return undefined;
  if (!parts[2] || !parts[3]) return undefined;
  return { namespace: parts[2], serviceAccount: parts[3] };
}

/** Audience of the projected ServiceAccount token the proxy sends to identity. */
export const IDENTITY_TOKEN_AUDIENCE = "identity.l5d.io";
