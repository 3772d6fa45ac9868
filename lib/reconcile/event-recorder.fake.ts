/**
 * reconcile/event-recorder.fake: an EventRecorder that keeps what it was told,
 * for the tests of the components that record Events (the proxy, the overlay).
 */
import type { EventRecorder, EventType, ObjectReference } from './event-recorder.js';

export interface RecordedEvent {
  readonly involved: ObjectReference;
  readonly type: EventType;
  readonly reason: string;
  readonly message: string;
}

export class FakeEventRecorder implements EventRecorder {
  readonly events: RecordedEvent[] = [];

  event(involved: ObjectReference, type: EventType, reason: string, message: string): void {
    this.events.push({ involved, type, reason, message });
  }
}
