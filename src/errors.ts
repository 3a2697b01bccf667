// The one error base class of the worker. Adapters translate library errors into it so callers decide on a
// stable `code` (never on message text) and on `retryable` (whether the same call may succeed later).

export class WorkerError extends Error {
  readonly code: string;
  readonly retryable: boolean;

  constructor(code: string, message: string, opts?: { retryable?: boolean; cause?: unknown }) {
    super(message, opts?.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'WorkerError';
    this.code = code;
    this.retryable = opts?.retryable ?? false;
  }
}
