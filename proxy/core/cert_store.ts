/**
 * Where the proxy's identity client puts its current certificate and the TLS layer reads it.
 * The TLS layer asks for `current()` per handshake, so a renewal takes effect on the next
 * connection without restarting listeners.
 */

export interface TlsCredentials {
  /** This proxy's identity name (also its TLS server name). */
  localName: string;
  /** PKCS#8 private key, PEM. */
  keyPem: string;
  /** Leaf certificate followed by intermediates, PEM. */
  certChainPem: string;
  /** Trust anchors bundle, PEM. */
  trustAnchorsPem: string;
  /** The leaf's notAfter. */
  expiresAt: Date;
}

export class CertStore {
  #current: TlsCredentials | undefined;
  #listeners = new Set<(c: TlsCredentials) => void>();
  #resolveReady!: () => void;
  /** Resolves when the first certificate has been accepted. */
  readonly ready: Promise<void> = new Promise((r) => this.#resolveReady = r);

  current(): TlsCredentials | undefined {
    return this.#current;
  }

  set(creds: TlsCredentials): void {
    this.#current = creds;
    this.#resolveReady();
    for (const l of this.#listeners) l(creds);
  }

  /** Calls `cb` on every new certificate; returns the unsubscribe function. */
  onChange(cb: (c: TlsCredentials) => void): () => void {
    this.#listeners.add(cb);
    return () => this.#listeners.delete(cb);
  }
}
