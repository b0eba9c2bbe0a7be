/**
 * Request starts that protocol detection must call HTTP/1 (so they are routed and authorized,
 * never forwarded as opaque TCP), each with whether the proxy's own HTTP/1 server takes it as a
 * request (`accepted`) or answers it with an error status itself. Lenient application servers
 * take many of the others, which is why detection must not call them opaque. Shared by the
 * detector's unit test and the data-path test that sends them through a real proxy.
 */

export interface DetectCase {
  name: string;
  /** The wire bytes (latin1) of a request for `path`. */
  wire: (path: string) => string;
  /** The proxy's HTTP/1 server takes it as a request (else it answers 400/505 and closes). */
  accepted: boolean;
}

const H = "Host: t\r\n";

export const DETECT_HTTP1_CORPUS: DetectCase[] = [
  { name: "leading CRLF", wire: (p) => `\r\nGET ${p} HTTP/1.1\r\n${H}\r\n`, accepted: true },
  { name: "three leading CRLFs", wire: (p) => `\r\n\r\n\r\nGET ${p} HTTP/1.1\r\n${H}\r\n`, accepted: true },
  { name: "PURGE", wire: (p) => `PURGE ${p} HTTP/1.1\r\n${H}\r\n`, accepted: true },
  { name: "M-SEARCH", wire: (p) => `M-SEARCH ${p} HTTP/1.1\r\n${H}\r\n`, accepted: true },
  { name: "lowercase custom method", wire: (p) => `purge ${p} HTTP/1.1\r\n${H}\r\n`, accepted: true },
  { name: "lowercase get", wire: (p) => `get ${p} HTTP/1.1\r\n${H}\r\n`, accepted: true },
  { name: "40-character method", wire: (p) => `${"X".repeat(40)} ${p} HTTP/1.1\r\n${H}\r\n`, accepted: true },
  {
    name: "method of token punctuation",
    wire: (p) => `X!#$%&'*+.^_\`|~9 ${p} HTTP/1.1\r\n${H}\r\n`,
    accepted: true,
  },
  { name: "HTTP/1.0 without Host", wire: (p) => `DELETE ${p} HTTP/1.0\r\n\r\n`, accepted: true },
  { name: "absolute-form target", wire: (p) => `GET http://t${p} HTTP/1.1\r\n${H}\r\n`, accepted: true },
  { name: "obs-text in the target", wire: (p) => `GET ${p}\xe9 HTTP/1.1\r\n${H}\r\n`, accepted: true },
  { name: "lowercase version", wire: (p) => `GET ${p} http/1.1\r\n${H}\r\n`, accepted: false },
  { name: "two spaces after the method", wire: (p) => `GET  ${p} HTTP/1.1\r\n${H}\r\n`, accepted: false },
  { name: "tabs as separators", wire: (p) => `GET\t${p}\tHTTP/1.1\r\n${H}\r\n`, accepted: false },
  { name: "a space inside the target", wire: (p) => `GET ${p} x HTTP/1.1\r\n${H}\r\n`, accepted: false },
  { name: "leading space", wire: (p) => ` GET ${p} HTTP/1.1\r\n${H}\r\n`, accepted: false },
  { name: "bare LF line ends", wire: (p) => `GET ${p} HTTP/1.1\n${H.replace("\r", "")}\n`, accepted: false },
  { name: "HTTP/0.9 simple request", wire: (p) => `GET ${p}\r\n\r\n`, accepted: false },
  { name: "HTTP/1.2", wire: (p) => `GET ${p} HTTP/1.2\r\n${H}\r\n`, accepted: false },
];
