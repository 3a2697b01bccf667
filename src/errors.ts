// The one error base class of the worker: a stable string `code` operators and tests can match on,
// and a `retryable` flag that tells the caller whether trying again can help. Adapters translate library
// errors into it; messages never carry secrets.
export class WorkerError extends Error {
  readonly code: string;
  readonly retryable: boolean;

  constructor(code: string, message: string, opts: { retryable?: boolean; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = new.target.name;
    this.code = code;
    this.retryable = opts.retryable ?? false;
  }
}
