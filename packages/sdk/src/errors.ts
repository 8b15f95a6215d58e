/**
 * The one error type of the SDK (SPEC 7). `status` is the HTTP status, or 0 when no answer
 * within the contract arrived: `network_error` (nothing came back), `timeout` (no complete
 * answer within the client's timeoutMs) or `malformed_response` (the answer is not JSON or not
 * the documented shape).
 */
export class WebhookPlatformError extends Error {
  override readonly name = 'WebhookPlatformError';
  /** Seconds from a Retry-After header, when the answer carried one (429, 503). */
  readonly retryAfter: number | undefined;

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    opts: { retryAfter?: number; cause?: unknown } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.retryAfter = opts.retryAfter;
  }

  static network(message: string, cause?: unknown): WebhookPlatformError {
    return new WebhookPlatformError(0, 'network_error', message, { cause });
  }

  static timeout(message: string, cause?: unknown): WebhookPlatformError {
    return new WebhookPlatformError(0, 'timeout', message, { cause });
  }

  static malformed(message: string): WebhookPlatformError {
    return new WebhookPlatformError(0, 'malformed_response', message);
  }
}
