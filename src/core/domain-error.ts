/**
 * A refusal the caller should see: a code of the error envelope and its HTTP status. Thrown
 * wherever the rule lives (a route, ingest, a query) and rendered as `{ error: { code, message } }`
 * in one place, the API's error middleware.
 */
export class DomainError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export const notFound = (what = 'resource') => new DomainError(404, 'not_found', `${what} not found`);

/** A published event that breaks the catalog's rules (DECISIONS: 422 invalid_event naming the field). */
export const invalidEvent = (message: string) => new DomainError(422, 'invalid_event', message);
