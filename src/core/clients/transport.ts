import http from "node:http";
import https from "node:https";
import { createFetch } from "ofetch";
import pkg from "../../../package.json" with { type: "json" };
import { CONNECT_TIMEOUT_CODE } from "../retry.ts";
import { hostOf, NetworkError } from "./network.ts";

/** A connection not made within this is given up: no byte of the request has left. */
export const CONNECT_TIMEOUT_MS = 10_000;

/**
 * ofetch for the clients in this folder, over `nodeFetch` below instead of Node's
 * built-in fetch. Node's fetch is undici, whose HTTP parser is WebAssembly: in a
 * long-running server it cost more memory once warm than the rest of the clients
 * together (docs/PERFORMANCE.md).
 */
const $http = createFetch({ fetch: nodeFetch });

/** One request to a remote, as the clients' own request helpers describe it. */
export interface CallInit {
  /** The remote's base address; absent when `path` is a whole URL. */
  baseURL?: string;
  method: string;
  headers?: Record<string, string>;
  body?: string;
  query?: Record<string, string | number>;
  timeout: number;
  /** Reads at most this many bytes of the answer's body, the rest left unread (nodeFetch). */
  maxBodyBytes?: number;
  /** The source address the connection is made from (CAST_LOCAL_ADDRESS); the system's choice when absent. */
  localAddress?: string;
}

/**
 * Makes one request and gives back any answer, its body as text: ofetch retries
 * nothing (a retry is the caller's policy, src/core/retry.ts) and throws only when no
 * answer came.
 */
export function callRemote(path: string, init: CallInit) {
  return $http.raw<string, "text">(path, { ...init, retry: 0, ignoreResponseError: true, responseType: "text" });
}

/**
 * The part of `fetch` ofetch uses, over node:http(s). Node's global agents keep
 * connections alive and, with NODE_USE_ENV_PROXY=1, honour HTTP(S)_PROXY as fetch did.
 * Like fetch: rejects with the signal's reason when aborted, and with a TypeError whose
 * `cause` is the socket's error when the request fails (a NetworkError, whose message
 * names the kind of failure and the host). Unlike fetch's default, it
 * follows no redirects: bridge's remotes answer where they are asked, and a redirected
 * POST comes back as the 3xx it is. With `maxBodyBytes`, an answer is read no further
 * than that: its status and the body's first bytes, the connection then closed.
 */
export function nodeFetch(
  input: string | URL | Request,
  init: RequestInit & { maxBodyBytes?: number; localAddress?: string } = {},
  connectTimeoutMs = CONNECT_TIMEOUT_MS,
): Promise<Response> {
  const url = new URL(input instanceof Request ? input.url : input);
  const send = { "http:": http.request, "https:": https.request }[url.protocol];
  if (!send) return Promise.reject(new TypeError(`unsupported URL scheme: ${url.protocol}`));
  const { signal, maxBodyBytes = Infinity, localAddress } = init;
  if (signal?.aborted) return Promise.reject(signal.reason);
  const body = bodyOf(init.body);
  const headers = Object.fromEntries(new Headers(init.headers));
  if (body) headers["content-length"] = String(body.byteLength);
  // fetch sent "node"; an API behind a firewall may refuse a request that names no client.
  headers["user-agent"] ??= `bridge/${pkg.version}`;

  return new Promise((resolve, reject) => {
    // A kept-alive connection is reused only by requests from the same local address (Node's agents key them by it).
    const req = send(url, { method: init.method ?? "GET", headers, ...(localAddress && { localAddress }) });
    const fail = (error: Error) => reject(signal?.aborted ? signal.reason : new NetworkError(error, hostOf(url)));
    const abort = () => req.destroy(signal?.reason);
    signal?.addEventListener("abort", abort, { once: true });
    req.on("close", () => signal?.removeEventListener("abort", abort));
    req.on("error", fail);
    req.on("socket", (socket) => {
      if (!socket.connecting) return; // a kept-alive connection
      const timer = setTimeout(() => req.destroy(connectTimeout(url, connectTimeoutMs)), connectTimeoutMs);
      socket.once("connect", () => clearTimeout(timer));
      socket.once("close", () => clearTimeout(timer));
    });
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      let read = 0;
      const finish = () => {
        try {
          resolve(toResponse(res, Buffer.concat(chunks).subarray(0, maxBodyBytes)));
        } catch (error) {
          fail(error as Error); // a status fetch does not allow, say
        }
      };
      res.on("data", (chunk: Buffer) => {
        chunks.push(chunk);
        read += chunk.byteLength;
        if (read <= maxBodyBytes) return;
        finish();
        res.destroy();
      });
      res.on("error", fail);
      res.on("end", finish);
    });
    req.end(body);
  });
}

/** Statuses whose response has no body, for fetch's Response. */
const NULL_BODY = new Set([101, 204, 205, 304]);

function toResponse(res: http.IncomingMessage, body: Buffer): Response {
  const status = res.statusCode ?? 0;
  const headers: [string, string][] = [];
  for (let i = 0; i < res.rawHeaders.length; i += 2) headers.push([res.rawHeaders[i]!, res.rawHeaders[i + 1]!]);
  return new Response(NULL_BODY.has(status) ? null : body, { status, statusText: res.statusMessage ?? "", headers });
}

/** The request body as bytes; the clients send strings (JSON or a form). */
function bodyOf(body: RequestInit["body"]): Buffer | undefined {
  if (body == null) return undefined;
  if (typeof body === "string" || body instanceof URLSearchParams) return Buffer.from(body.toString());
  if (body instanceof Uint8Array) return Buffer.from(body);
  throw new TypeError("nodeFetch sends string, URLSearchParams or byte bodies only");
}

function connectTimeout(url: URL, ms: number): Error {
  const error = new Error(`could not connect to ${hostOf(url)} within ${ms / 1000} s`);
  return Object.assign(error, { code: CONNECT_TIMEOUT_CODE });
}
