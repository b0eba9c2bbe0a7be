/**
 * PEM (RFC 7468) as text ↔ DER bytes, for the control plane and the proxy alike. Pure text
 * handling: what the bytes mean is left to the caller's parser.
 */

export class PemError extends Error {
  override name = "PemError";
}

/** `der` as one PEM block with `label`, base64 in 64-character lines. */
export function toPem(der: Uint8Array, label = "CERTIFICATE"): string {
  let bin = "";
  for (let i = 0; i < der.length; i++) bin += String.fromCharCode(der[i]);
  const lines = btoa(bin).match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function escapeLabel(label: string): string {
  return label.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * The DER of every block labelled `label` in `text`, in order (text outside blocks is ignored, as
 * openssl does). Throws PemError naming `what` when there is no such block or one is not base64.
 */
export function decodePem(text: string, label: string, what: string): Uint8Array<ArrayBuffer>[] {
  const l = escapeLabel(label);
  const re = new RegExp(`-----BEGIN ${l}-----([\\s\\S]*?)-----END ${l}-----`, "g");
  const blocks = [...text.matchAll(re)];
  if (blocks.length === 0) throw new PemError(`${what}: no PEM ${label} block found`);
  return blocks.map((m, i) => {
    const b64 = m[1].replace(/\s+/g, "");
    if (b64.length === 0 || b64.length % 4 !== 0 || !BASE64.test(b64)) {
      throw new PemError(`${what}: PEM ${label} block #${i + 1} is not valid base64`);
    }
    const bin = atob(b64);
    const out = new Uint8Array(bin.length);
    for (let j = 0; j < bin.length; j++) out[j] = bin.charCodeAt(j);
    return out;
  });
}
