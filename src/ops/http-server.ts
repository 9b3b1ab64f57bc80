import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { ErrorCode, statusOf } from '../common/error-codes';
import { errorBody } from '../common/error.filter';

/**
 * Idle keep-alive connections are kept a little longer than the 60 s idle timeout of common load
 * balancers and proxies (AWS ALB, nginx), so the proxy, not the service, closes them: with Node's
 * default of 5 s the service may close a connection just as the proxy sends the next request on it,
 * which the proxy answers 502. An idle socket costs a file descriptor, not a request slot.
 */
const KEEP_ALIVE_TIMEOUT_MS = 65_000;

/**
 * The Node HTTP server's own limits, set on purpose rather than left at Node's defaults:
 *
 * - `requestTimeout` = REQUEST_TIMEOUT_S (default 30 s; Node's is 300 s): the longest a client may take
 *   to send a whole request, headers and body (at most 1 MiB, i.e. ≥ 35 KB/s at 30 s). A client that
 *   drips bytes holds a socket that long at most, then gets 408 and a closed socket.
 * - `headersTimeout` = the same: one limit for the whole request (Node's default, 60 s, would exceed it).
 * - `keepAliveTimeout` = 65 s (above).
 * - `connectionsCheckingInterval` = 1 s (Node's is 30 s): how often those timeouts are checked, so a 30 s
 *   limit fires within 31 s rather than within a minute.
 *
 * Node answers what never reaches Express itself (headers over its 16 KiB limit → 431, a malformed
 * request → 400, a request too slow → 408) with a bare status line. Here they get the service's JSON
 * error shape and an X-Request-Id, when the socket still allows an answer; the socket is then closed.
 */
export function hardenHttpServer(server: Server, opts: { requestTimeoutS: number; logger: Logger }): void {
  server.requestTimeout = opts.requestTimeoutS * 1000;
  server.headersTimeout = opts.requestTimeoutS * 1000;
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  // Read by Node when the server starts listening.
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = 1000;
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => answerClientError(err, socket, opts.logger));
}

const CLIENT_ERRORS: Record<string, [ErrorCode, string]> = {
  HPE_HEADER_OVERFLOW: ['headers_too_large', 'The request headers are larger than 16 KiB.'],
  ERR_HTTP_REQUEST_TIMEOUT: ['request_timeout', 'The request did not arrive in time.'],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: ['payload_too_large', 'The chunk extensions of the body are too large.'],
};

function answerClientError(err: NodeJS.ErrnoException, socket: Socket, logger: Logger): void {
  // Node's own rule: answer only when nothing of a response has been written to this socket yet.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const [code, message] = CLIENT_ERRORS[err.code ?? ''] ?? ['bad_request', 'The request is malformed.'];
  const status = statusOf(code);
  const shape = errorBody(status, code, message);
  const body = JSON.stringify(shape);
  const requestId = randomUUID();
  socket.write(
    [
      `HTTP/1.1 ${status} ${shape.error}`,
      'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(body)}`,
      `X-Request-Id: ${requestId}`,
      'X-Content-Type-Options: nosniff',
      'Cache-Control: no-store',
      'Connection: close',
      '',
      body,
    ].join('\r\n'),
  );
  // Closes once the answer is flushed.
  socket.destroySoon();
  logger.warn({ reqId: requestId, status, code, reason: err.code ?? err.message }, 'request refused by the HTTP server');
}
