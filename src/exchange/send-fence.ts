// The lease fence at the moment of sending: an undici interceptor that runs the caller's check synchronously as the
// request's head is written to its connection, after any wait inside the HTTP pool, and stops the request unsent
// when the check throws (the order's lease is no longer this replica's). Used by transport.ts for every attempt.
import type { Dispatcher } from 'undici';

/** What a fence threw, carried through undici: the attempt was stopped before a byte of it was written. */
export class StoppedUnsent extends Error {
  readonly reason: unknown;
  constructor(reason: unknown) {
    super('stopped before it was sent');
    this.reason = reason;
  }
}

/**
 * Runs the fence in undici's request-start hook: undici calls it synchronously just before it writes the request's
 * head to the socket (client-h1 `writeH1`), so nothing runs between the check and the write. `compose` hands an
 * interceptor handlers of the current (controller) API.
 */
export function fenced(dispatcher: Dispatcher, fence: () => void): Dispatcher {
  return dispatcher.compose(
    (dispatch) => (opts, handler) =>
      dispatch(opts, {
        onRequestStart(controller, context) {
          handler.onRequestStart?.(controller, context);
          try {
            fence();
          } catch (error) {
            controller.abort(new StoppedUnsent(error));
          }
        },
        onRequestUpgrade: (controller, status, headers, socket) =>
          handler.onRequestUpgrade?.(controller, status, headers, socket),
        onResponseStart: (controller, status, headers, message) =>
          handler.onResponseStart?.(controller, status, headers, message),
        onResponseData: (controller, chunk) => handler.onResponseData?.(controller, chunk),
        onResponseEnd: (controller, trailers) => handler.onResponseEnd?.(controller, trailers),
        onResponseError: (controller, error) => handler.onResponseError?.(controller, error),
      }),
  );
}
