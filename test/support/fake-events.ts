// A test double's stand-in for an event of an order's history: only the fields a test looks at. The host and the
// journal pass events through without reading their payload, so a fake need not be a whole contract event.
import type { EventPayload } from '../../src/worker/order-journal.ts';

/** A partial event, typed as the contract's payload (the fields it lacks are not read by the code under test). */
export function fakeEvent(event: { type: string; [field: string]: unknown }): EventPayload {
  return event as unknown as EventPayload;
}
