/**
 * Mesh TLS, the only module that touches node:tls (Deno's own TLS APIs cannot request client
 * certificates or set SNI apart from the address). TLS 1.3 only; the credentials come from the
 * CertStore per handshake, so a renewed certificate applies to the next connection.
 */
import * as tls from "node:tls";
import type * as net from "node:net";
import { connect as netConnect } from "node:net";
import { tlsReadGate } from "./tls_flow.ts";
import type { CertStore, TlsCredentials } from "../core/cert_store.ts";
import { dnsSansOf, PeerVerifier, type PresentedCert } from "./peer_verify.ts";
import { buildTrustBundle, type TrustBundle, type TrustStore } from "../core/trust_store.ts";

/** Honoured by node:tls (passed to the underlying socket) though missing from its option types. */
type HalfOpen = { allowHalfOpen: boolean };

export class MeshTlsError extends Error {
  override name = "MeshTlsError";
  constructor(
    readonly kind: "no_identity" | "handshake" | "untrusted_peer" | "peer_identity",
    message: string,
  ) {
    super(message);
  }
}

export interface AcceptedTls {
  socket: tls.TLSSocket;
  /** Verified client identity; undefined when the client sent no certificate. */
  clientId: string | undefined;
  alpn: string | undefined;
}

export interface ConnectTlsOptions {
  host: string;
  port: number;
  /** SNI to send (the server's identity name unless the endpoint names another). */
  serverName: string;
  /** The identity the server's certificate must carry. */
  expectedIdentity: string;
  alpn?: string[];
  timeoutMs: number;
}

export class MeshTls {
  #store: CertStore;
  #trust: TrustStore | undefined;
  #ctxFor: TlsCredentials | undefined;
  #ctx: tls.SecureContext | undefined;
  #verifierFor: [TlsCredentials, TrustBundle] | undefined;
  #clientCtxFor: [TlsCredentials, TrustBundle] | undefined;
  #clientCtx: tls.SecureContext | undefined;
  #verifier: PeerVerifier | undefined;
  /** The bundle of credentials that carry their own anchors (no TrustStore), built once per credentials. */
  #ownBundleFor: TlsCredentials | undefined;
  #ownBundle: TrustBundle | undefined;

  /**
   * `trust` is the live bundle (anchors, published issuers); without it the anchors are those
   * the credentials carry. Contexts and verifier caches are rebuilt when either changes.
   */
  constructor(store: CertStore, trust?: TrustStore) {
    this.#store = store;
    this.#trust = trust;
  }

  #bundle(c: TlsCredentials): TrustBundle {
    if (this.#trust) return this.#trust.current();
    if (this.#ownBundleFor !== c) {
      this.#ownBundle = buildTrustBundle(c.trustAnchorsPem).bundle;
      this.#ownBundleFor = c;
    }
    return this.#ownBundle!;
  }

  #creds(): TlsCredentials {
    const c = this.#store.current();
    if (!c) throw new MeshTlsError("no_identity", "no certificate yet: identity is not certified");
    return c;
  }

  #serverContext(c: TlsCredentials): tls.SecureContext {
    if (this.#ctxFor !== c) {
      this.#ctx = tls.createSecureContext({ key: c.keyPem, cert: c.certChainPem, minVersion: "TLSv1.3" });
      this.#ctxFor = c;
    }
    return this.#ctx!;
  }

  /** Parsing PEM per connection costs a third of the handshake rate, so contexts are reused. */
  #clientContext(c: TlsCredentials): tls.SecureContext {
    const b = this.#bundle(c);
    if (this.#clientCtxFor?.[0] !== c || this.#clientCtxFor[1] !== b) {
      this.#clientCtx = tls.createSecureContext({
        key: c.keyPem,
        cert: c.certChainPem,
        // The server sends its issuer after its leaf and the native verifier follows it to an
        // anchor; published issuers (already checked against the anchors) cover a server that
        // sends its leaf alone.
        ca: b.anchorsPem + b.issuersPem,
        minVersion: "TLSv1.3",
      });
      this.#clientCtxFor = [c, b];
    }
    return this.#clientCtx!;
  }

  #peerVerifier(c: TlsCredentials): PeerVerifier {
    const b = this.#bundle(c);
    if (this.#verifierFor?.[0] !== c || this.#verifierFor[1] !== b) {
      this.#verifier = new PeerVerifier(b, c.certChainPem);
      this.#verifierFor = [c, b];
    }
    return this.#verifier!;
  }

  /** This proxy's identity, if certified. */
  localName(): string | undefined {
    return this.#store.current()?.localName;
  }

  /**
   * Terminates TLS on an accepted socket whose first bytes (if already read) were unshifted back.
   * A presented client certificate that does not verify fails the handshake.
   */
  async accept(sock: net.Socket, alpn: string[], timeoutMs: number): Promise<AcceptedTls> {
    const c = this.#creds();
    const verifier = this.#peerVerifier(c);
    return await new Promise((resolve, reject) => {
      // Through a gate: Deno's TLS wrapper would read a paused peer without bound (tls_flow.ts).
      const gate = tlsReadGate(sock);
      const t = new tls.TLSSocket(
        gate.transport,
        <tls.TLSSocketOptions & HalfOpen> {
          isServer: true,
          secureContext: this.#serverContext(c),
          requestCert: true,
          rejectUnauthorized: false,
          // Proxies pass half-closes through; the default would end our side on the peer's FIN.
          allowHalfOpen: true,
          ALPNProtocols: alpn.length > 0 ? alpn : undefined,
        },
      );
      const timer = setTimeout(
        () => fail(new MeshTlsError("handshake", `TLS handshake timed out after ${timeoutMs}ms`)),
        timeoutMs,
      );
      const fail = (e: Error) => {
        clearTimeout(timer);
        t.destroy();
        sock.destroy();
        reject(e instanceof MeshTlsError ? e : new MeshTlsError("handshake", e.message));
      };
      t.once("error", fail);
      t.once("secure", () => {
        clearTimeout(timer);
        t.off("error", fail);
        gate.gate(t);
        const peer = t.getPeerCertificate();
        let clientId: string | undefined;
        if (peer && peer.raw) {
          const now = Date.now();
          // A known leaf needs no chain; otherwise the certificates the client sent after it.
          const v = verifier.cachedTrusted(peer.raw, peer.fingerprint256, now) ??
            verifier.verify(peer.raw, now, peer.fingerprint256, presentedChain(t));
          if (!v.ok) {
            t.destroy();
            sock.destroy();
            reject(new MeshTlsError("untrusted_peer", `client certificate refused: ${v.reason}`));
            return;
          }
          clientId = v.identity;
        }
        resolve({
          socket: t,
          clientId,
          alpn: typeof t.alpnProtocol === "string" ? t.alpnProtocol : undefined,
        });
      });
    });
  }

  /** Connects with mesh TLS, presenting our certificate and requiring the expected server identity. */
  async connect(opts: ConnectTlsOptions): Promise<ConnectedTls> {
    return await connectTls(this.#clientContext(this.#creds()), opts);
  }
}

/**
 * What the client sent after its leaf. Deno 2.9.6's getPeerCertificate(true) links the presented
 * certificates through issuerCertificate, in the order sent, and adds nothing of its own (the
 * server side has no `ca` and does not verify); docs/identity.md has the experiment.
 */
function presentedChain(t: tls.TLSSocket): PresentedCert[] {
  const out: PresentedCert[] = [];
  let cur = t.getPeerCertificate(true)?.issuerCertificate;
  const seen = new Set<string>();
  while (cur && cur.raw && out.length < 4 && !seen.has(cur.fingerprint256)) {
    seen.add(cur.fingerprint256);
    out.push({ raw: cur.raw, fingerprint256: cur.fingerprint256 });
    cur = cur.issuerCertificate;
  }
  return out;
}

/**
 * TLS that authenticates only the server, for the identity service, which the proxy reaches before
 * it has a certificate of its own: the server's chain must verify against `trustAnchorsPem` and
 * name `opts.expectedIdentity`.
 */
export function connectServerAuthTls(
  trustAnchorsPem: string,
  opts: ConnectTlsOptions,
): Promise<ConnectedTls> {
  return connectTls(tls.createSecureContext({ ca: trustAnchorsPem, minVersion: "TLSv1.3" }), opts);
}

export interface ConnectedTls {
  socket: tls.TLSSocket;
  alpn: string | undefined;
}

/**
 * Deno's tls.connect hands checkServerIdentity the peer's certificate with its whole chain, which
 * it builds on every handshake by parsing each certificate the peer sent and every CA certificate
 * of the context (a tenth of an outbound proxy's CPU per new connection). The identity check needs
 * the leaf only, so until the handshake is over the socket answers with the leaf; the chain itself
 * is verified natively either way (t.authorized). Afterwards it answers as node:tls does (the
 * method stays: deleting a property would slow every later use of the socket).
 */
function leafOnlyDuringHandshake(t: tls.TLSSocket): void {
  const full = t.getPeerCertificate;
  let handshaking = true;
  t.getPeerCertificate =
    ((detailed?: boolean) =>
      full.call(t, handshaking ? false : detailed === true)) as typeof t.getPeerCertificate;
  t.once("secureConnect", () => handshaking = false);
}

function connectTls(secureContext: tls.SecureContext, opts: ConnectTlsOptions): Promise<ConnectedTls> {
  return new Promise((resolve, reject) => {
    let identityError: string | undefined;
    // TLS over our own TCP socket, through a gate (see accept()).
    const raw = netConnect({ host: opts.host, port: opts.port, noDelay: true, allowHalfOpen: true });
    const gate = tlsReadGate(raw);
    const t = tls.connect(
      <tls.ConnectionOptions & HalfOpen> {
        socket: gate.transport,
        servername: opts.serverName,
        secureContext,
        minVersion: "TLSv1.3",
        allowHalfOpen: true,
        ALPNProtocols: opts.alpn,
        checkServerIdentity: (_host, cert) => {
          // node:tls parsed the leaf already: its subjectaltname text needs no second parse.
          const sans = dnsSansOf(cert.subjectaltname);
          if (sans.includes(opts.expectedIdentity)) return undefined;
          identityError = `server presented ${JSON.stringify(sans)}, want ${opts.expectedIdentity}`;
          return new Error(identityError);
        },
      },
    );
    leafOnlyDuringHandshake(t);
    // The TCP socket is ours, so it closes with the TLS socket.
    t.once("close", () => raw.destroy());
    const timer = setTimeout(
      () => fail(new MeshTlsError("handshake", `TLS connect timed out after ${opts.timeoutMs}ms`)),
      opts.timeoutMs,
    );
    const fail = (e: Error) => {
      clearTimeout(timer);
      t.destroy();
      raw.destroy();
      reject(
        e instanceof MeshTlsError
          ? e
          : identityError !== undefined
          ? new MeshTlsError("peer_identity", identityError)
          : new MeshTlsError("handshake", `TLS to ${opts.host}:${opts.port} failed: ${e.message}`),
      );
    };
    t.once("error", fail);
    t.once("secureConnect", () => {
      clearTimeout(timer);
      t.off("error", fail);
      if (!t.authorized) {
        fail(new MeshTlsError("untrusted_peer", `server certificate refused: ${t.authorizationError}`));
        return;
      }
      if (identityError !== undefined) {
        fail(new MeshTlsError("peer_identity", identityError));
        return;
      }
      gate.gate(t);
      resolve({ socket: t, alpn: typeof t.alpnProtocol === "string" ? t.alpnProtocol : undefined });
    });
  });
}
