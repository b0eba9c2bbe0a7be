/**
 * Malformed and hostile HTTP/1 requests with the status the proxy must answer each with (then
 * closing the connection): request smuggling (CL.TE, TE.CL, TE.TE), obs-fold, bare LF, oversized
 * heads, CONNECT, bad chunking, slowloris (a list of pieces sent apart). Shared by the codec test
 * and the data-path test that sends them through a real proxy.
 */

/** The Host field every well-formed request here carries. */
export const H = "Host: t\r\n";

/** Each hostile request, the status it must get; the server must then close the connection. */
export const HOSTILE_CORPUS: [name: string, wire: string | string[], status: number][] = [
  [
    "CL.TE smuggling",
    `POST / HTTP/1.1\r\n${H}Content-Length: 13\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\n${H}\r\n`,
    400,
  ],
  [
    "TE.CL smuggling",
    `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n5c\r\nGET /smuggled HTTP/1.1\r\n${H}\r\n0\r\n\r\n`,
    400,
  ],
  [
    "TE.TE: second TE not chunked",
    `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\nTransfer-Encoding: cow\r\n\r\n0\r\n\r\n`,
    400,
  ],
  ["TE.TE: space before colon", `POST / HTTP/1.1\r\n${H}Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n`, 400],
  ["TE.TE: xchunked", `POST / HTTP/1.1\r\n${H}Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n`, 400],
  [
    "TE.TE: tab-prefixed value line (obs-fold)",
    `POST / HTTP/1.1\r\n${H}Transfer-Encoding:\r\n\tchunked\r\n\r\n0\r\n\r\n`,
    400,
  ],
  ["TE.TE: vertical tab", `POST / HTTP/1.1\r\n${H}Transfer-Encoding:\x0bchunked\r\n\r\n0\r\n\r\n`, 400],
  [
    "TE gzip, chunked (unsupported coding)",
    `POST / HTTP/1.1\r\n${H}Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n`,
    501,
  ],
  [
    "differing Content-Length",
    `POST / HTTP/1.1\r\n${H}Content-Length: 1\r\nContent-Length: 2\r\n\r\nab`,
    400,
  ],
  ["obs-fold", `GET / HTTP/1.1\r\n${H}X-A: 1\r\n folded\r\n\r\n`, 400],
  ["bare LF", `GET / HTTP/1.1\n${H.replace("\r", "")}\n`, 400],
  ["bare LF between fields", `GET / HTTP/1.1\r\nHost: t\nX: 1\r\n\r\n`, 400],
  ["invalid header name", `GET / HTTP/1.1\r\n${H}X[1]: 1\r\n\r\n`, 400],
  ["control char in value", `GET / HTTP/1.1\r\n${H}X-A: a\x01b\r\n\r\n`, 400],
  ["malformed request line", `GET /\r\n${H}\r\n`, 400],
  ["not HTTP at all", `\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n`, 400],
  ["HTTP/2.0 request line", `GET / HTTP/2.0\r\n${H}\r\n`, 505],
  ["HTTP/1.1 without Host", `GET / HTTP/1.1\r\nX-A: 1\r\n\r\n`, 400],
  ["two Host fields", `GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n`, 400],
  ["head too large", `GET / HTTP/1.1\r\n${H}X-Big: ${"a".repeat(70 * 1024)}\r\n\r\n`, 431],
  ["too many headers", `GET / HTTP/1.1\r\n${H}${"X-Many: 1\r\n".repeat(101)}\r\n`, 431],
  ["CONNECT", `CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n`, 501],
  ["bad chunk size in body", `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\nzz\r\n`, 400],
  [
    "chunk data without CRLF",
    `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n3\r\nabcXY0\r\n\r\n`,
    400,
  ],
  ["unsupported expectation", `GET / HTTP/1.1\r\n${H}Expect: teapot\r\n\r\n`, 417],
  ["slowloris (head dribbled past the header timeout)", [
    "GET / HTTP/1.1\r\n",
    "X",
    "-",
    "A",
    ":",
    " ",
    "1",
    "\r",
    "\n",
    "X",
  ], 408],
];
