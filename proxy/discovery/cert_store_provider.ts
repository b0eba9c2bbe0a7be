/**
 * Feeds the proxy's current certificate to grpc-js, so control-plane channels created before
 * identity is certified wait for it (instead of dialling with empty credentials and failing the
 * server's client-certificate check), and pick up every renewal on their next connection.
 */
import type * as grpc from "@grpc/grpc-js";
import type { CertStore, TlsCredentials } from "../identity/cert_store.ts";

type CaListener = grpc.experimental.CaCertificateUpdateListener;
type IdListener = grpc.experimental.IdentityCertificateUpdateListener;

const enc = new TextEncoder();

export class CertStoreProvider implements grpc.experimental.CertificateProvider {
  #ca = new Set<CaListener>();
  #id = new Set<IdListener>();
  #unsubscribe: (() => void) | undefined;

  constructor(private readonly store: CertStore) {}

  #watch(): void {
    if (this.#unsubscribe) return;
    this.#unsubscribe = this.store.onChange((c) => {
      for (const l of this.#ca) l(caUpdate(c));
      for (const l of this.#id) l(idUpdate(c));
    });
  }

  #maybeUnwatch(): void {
    if (this.#ca.size === 0 && this.#id.size === 0) {
      this.#unsubscribe?.();
      this.#unsubscribe = undefined;
    }
  }

  addCaCertificateListener(l: CaListener): void {
    this.#ca.add(l);
    this.#watch();
    const c = this.store.current();
    if (c) l(caUpdate(c));
  }

  removeCaCertificateListener(l: CaListener): void {
    this.#ca.delete(l);
    this.#maybeUnwatch();
  }

  addIdentityCertificateListener(l: IdListener): void {
    this.#id.add(l);
    this.#watch();
    const c = this.store.current();
    if (c) l(idUpdate(c));
  }

  removeIdentityCertificateListener(l: IdListener): void {
    this.#id.delete(l);
    this.#maybeUnwatch();
  }
}

function caUpdate(c: TlsCredentials): grpc.experimental.CaCertificateUpdate {
  return { caCertificate: Buffer.from(enc.encode(c.trustAnchorsPem)) };
}

function idUpdate(c: TlsCredentials): grpc.experimental.IdentityCertificateUpdate {
  return {
    certificate: Buffer.from(enc.encode(c.certChainPem)),
    privateKey: Buffer.from(enc.encode(c.keyPem)),
  };
}
