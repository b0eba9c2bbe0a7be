/** @peculiar/x509, loaded after the metadata shim it needs and bound to WebCrypto. */
import "../../proto/support/reflect_metadata.ts";
import * as x509 from "@peculiar/x509";

x509.cryptoProvider.set(crypto);

export { x509 };
