/**
 * Checks on a ServiceAccount token that need no key and no API call: it is a JWT of sane size,
 * unexpired, already valid, for the identity audience, and names a ServiceAccount. Junk and
 * foreign tokens are refused here in microseconds instead of spending a rate-limited TokenReview;
 * the claims read here are unverified (anyone can write them), so they only pick the fair-queue
 * key and an early mismatch refusal, never grant anything: the TokenReview still decides.
 */
import { parseServiceAccountUsername } from "../../proto/identity_name.ts";
import { TokenRejected } from "./token_validator.ts";

export interface TokenScreenOptions {
  /** `aud` must include one of these. */
  audiences: string[];
  /** Allowance on `exp` and `nbf` for nodes whose clocks disagree a little. */
  skewMs: number;
  /** Longer tokens are refused before decoding (Kubernetes tokens are ~1 KiB). */
  maxBytes: number;
}

export const DEFAULT_TOKEN_MAX_BYTES = 16 * 1024;

/** The ServiceAccount a token claims to be for, unverified. */
export interface ClaimedServiceAccount {
  namespace: string;
  serviceAccount: string;
}

/**
 * Reads `token`'s claims or throws TokenRejected naming the first problem. Undefined means the
 * deployment accepts opaque tokens whose claims cannot be read (test stand-ins only).
 */
export type TokenScreen = (token: string, now: number) => ClaimedServiceAccount | undefined;

export function tokenScreen(opts: TokenScreenOptions): TokenScreen {
  return (token, now) => screenToken(token, now, opts);
}

const BASE64URL = /^[A-Za-z0-9_-]+$/;
const utf8 = new TextDecoder("utf-8", { fatal: true });

function part(s: string, what: string): Record<string, unknown> {
  if (!BASE64URL.test(s)) throw malformed(`token ${what} is not base64url`);
  let json: unknown;
  try {
    const bin = atob(s.replaceAll("-", "+").replaceAll("_", "/"));
    json = JSON.parse(utf8.decode(Uint8Array.from(bin, (c) => c.charCodeAt(0))));
  } catch {
    throw malformed(`token ${what} is not base64url-encoded JSON`);
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw malformed(`token ${what} is not a JSON object`);
  }
  return json as Record<string, unknown>;
}

function malformed(why: string): TokenRejected {
  return new TokenRejected("token_malformed", why);
}

function numericDate(claims: Record<string, unknown>, name: string): number | undefined {
  const v = claims[name];
  if (v === undefined) return undefined;
  if (typeof v !== "number" || !Number.isFinite(v)) throw malformed(`token "${name}" is not a number`);
  return v * 1000;
}

export function screenToken(token: string, now: number, opts: TokenScreenOptions): ClaimedServiceAccount {
  if (token.length > opts.maxBytes) {
    throw malformed(`token is ${token.length} bytes, over the ${opts.maxBytes}-byte limit`);
  }
  const parts = token.split(".");
  if (parts.length !== 3) {
    throw malformed(`token is not a JWT (${parts.length} part${parts.length === 1 ? "" : "s"}, want 3)`);
  }
  const header = part(parts[0], "header");
  const claims = part(parts[1], "payload");
  if (!BASE64URL.test(parts[2])) throw malformed("token signature is empty or not base64url");
  if (typeof header.alg !== "string" || header.alg === "none") {
    throw malformed(`token header alg ${JSON.stringify(header.alg ?? null)} is not a signature algorithm`);
  }

  const exp = numericDate(claims, "exp");
  if (exp === undefined) throw new TokenRejected("token_expired", "token has no expiry (exp)");
  if (exp + opts.skewMs <= now) {
    throw new TokenRejected("token_expired", `token expired at ${new Date(exp).toISOString()}`);
  }
  const nbf = numericDate(claims, "nbf");
  if (nbf !== undefined && nbf - opts.skewMs > now) {
    throw new TokenRejected(
      "token_not_yet_valid",
      `token is not valid before ${new Date(nbf).toISOString()}`,
    );
  }

  const aud = typeof claims.aud === "string" ? [claims.aud] : claims.aud;
  const want = opts.audiences.map((a) => JSON.stringify(a)).join(" or ");
  if (!Array.isArray(aud) || !aud.every((a) => typeof a === "string")) {
    throw new TokenRejected("token_audience", `token has no audience (aud), want ${want}`);
  }
  if (!aud.some((a) => opts.audiences.includes(a))) {
    throw new TokenRejected(
      "token_audience",
      `token audience ${JSON.stringify(aud).slice(0, 200)} does not include ${want}`,
    );
  }

  const sub = typeof claims.sub === "string" ? claims.sub : "";
  const sa = parseServiceAccountUsername(sub);
  if (!sa) {
    throw new TokenRejected(
      "token_not_serviceaccount",
      `token subject ${JSON.stringify(sub.slice(0, 200))} is not a ServiceAccount`,
    );
  }
  return sa;
}
