/**
 * `l5d-client-id`: the inbound proxy tells the application which mesh identity sent a request.
 * The header is trusted only because the proxy sets it — so it is always removed from what the
 * client sent, then set again only for a client authenticated by mTLS.
 */
import type { HeaderList } from "./message.ts";

export const CLIENT_ID_HEADER = "l5d-client-id";

export function setClientId(headers: HeaderList, clientId: string | undefined): void {
  headers.delete(CLIENT_ID_HEADER);
  if (clientId) headers.append(CLIENT_ID_HEADER, clientId);
}
