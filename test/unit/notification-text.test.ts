import { describe, expect, it } from 'vitest';
import { notificationText } from '../../src/core/notification-text.js';

describe('notification text', () => {
  it('words the plan warnings and the endpoint alerts', () => {
    expect(notificationText('free_plan_warning', { count: 240, limit: 300 }).subject).toBe(
      'Free plan: 240 of 300 received messages forwarded this month',
    );
    expect(notificationText('free_plan_warning', { count: 300, limit: 300 }).text).toContain('limited');
    expect(notificationText('endpoint_failing', { failure_streak: 10, url: 'https://x/h', endpoint_id: 'e' }).subject).toContain(
      '10 deliveries in a row',
    );
    expect(notificationText('endpoint_paused', { url: 'https://x/h', endpoint_id: 'e' }).text).toContain('/api/v1/webhooks/e/test');
  });
});
