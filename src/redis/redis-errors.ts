// Translates whatever the Redis client throws into a WorkerError with a stable code.
// Connection trouble is retryable ("redis_unavailable"); a reply error from Redis itself is not, except the
// transient server states (loading, failover, busy script, out of memory) that clear on their own.
import { WorkerError } from '../errors.ts';

export const redisErrorCodes = {
  unavailable: 'redis_unavailable',
  commandFailed: 'redis_command_failed',
  invalidArgument: 'invalid_argument',
} as const;

const transientReplyPrefixes = [
  'LOADING',
  'BUSY',
  'OOM',
  'READONLY',
  'CLUSTERDOWN',
  'TRYAGAIN',
  'MASTERDOWN',
  'NOREPLICAS',
];

/** Never let a connection string with credentials reach a log line through an error message. */
function redact(message: string): string {
  return message.replace(/(rediss?:\/\/)[^@\s/]*@/gi, '$1***@');
}

export function toRedisWorkerError(error: unknown, what = 'redis call'): WorkerError {
  if (error instanceof WorkerError) return error;
  const message = redact(error instanceof Error ? error.message : String(error));
  const name = error instanceof Error ? error.name : '';
  if (name === 'ReplyError') {
    return transientReplyPrefixes.some((prefix) => message.startsWith(prefix))
      ? new WorkerError(redisErrorCodes.unavailable, `${what}: redis cannot serve right now: ${message}`, {
          retryable: true,
          cause: error,
        })
      : new WorkerError(redisErrorCodes.commandFailed, `${what}: redis refused the command: ${message}`, {
          cause: error,
        });
  }
  if (error instanceof TypeError || error instanceof RangeError) {
    return new WorkerError(redisErrorCodes.commandFailed, `${what}: ${message}`, { cause: error });
  }
  // Everything else the client raises is about the connection ("Stream isn't writeable", "Connection is closed",
  // "Command timed out", max retries per request, socket errors): the command may not have reached Redis, or
  // its reply was lost, so a write may or may not have been applied.
  return new WorkerError(redisErrorCodes.unavailable, `${what}: redis unreachable: ${message}`, {
    retryable: true,
    cause: error,
  });
}

export function invalidArgument(message: string): WorkerError {
  return new WorkerError(redisErrorCodes.invalidArgument, message);
}
