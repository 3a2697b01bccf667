// The record of requests the late_landing fault holds back: each arrived, was dropped (or held) without an answer,
// and takes effect only when its landing time comes (or never, when the sandbox closes first). Tests wait on it:
// an invariant about exchange orders is judged only once nothing is still due to land.

export type LateLandingState = 'pending' | 'landed' | 'refused' | 'discarded';

export interface LateLanding {
  id: number;
  /** The fault's endpoint name, e.g. "POST /orders/". */
  endpoint: string;
  /** Wall-clock ms (the held request's own timers are real time, like latency). */
  arrivedAt: number;
  landsAt: number;
  /** When the client's connection was dropped without an answer, if it was (or the client left first). */
  droppedAt: number | null;
  state: LateLandingState;
  /** The status the request's handler answered (to nobody) when it landed; null while pending. */
  status: number | null;
  /** The unique_reference of the order the landing answered with (created or reused), if any. */
  uniqueReference: string | null;
}

export class LateLandings {
  readonly #all: LateLanding[] = [];
  #nextId = 1;

  start(endpoint: string, arrivedAt: number, landAfterMs: number): LateLanding {
    const landing: LateLanding = {
      id: this.#nextId++,
      endpoint,
      arrivedAt,
      landsAt: arrivedAt + landAfterMs,
      droppedAt: null,
      state: 'pending',
      status: null,
      uniqueReference: null,
    };
    this.#all.push(landing);
    return landing;
  }

  list(): LateLanding[] {
    return this.#all.map((landing) => ({ ...landing }));
  }

  pending(): number {
    return this.#all.filter((landing) => landing.state === 'pending').length;
  }
}
