/** The words of owner notifications, by kind. Pure, so they are tested without a mailer. */
export interface NotificationText {
  subject: string;
  text: string;
}

export function notificationText(kind: string, p: Record<string, unknown>): NotificationText {
  switch (kind) {
    case 'free_plan_warning':
      return {
        subject: `Free plan: ${p.count} of ${p.limit} received messages forwarded this month`,
        text:
          Number(p.count) >= Number(p.limit)
            ? `Your Account has forwarded ${p.count} received messages this month, the Free plan's limit. Further received messages are still stored and readable, but their webhook deliveries are marked "limited" and are not sent unless resent by hand; messages received from the next month on are forwarded again. Upgrade to lift the limit.`
            : `Your Account has forwarded ${p.count} of the ${p.limit} received messages the Free plan includes this month.`,
      };
    case 'endpoint_failing':
      return {
        subject: `Webhook endpoint failing: ${p.failure_streak} deliveries in a row`,
        text: `Deliveries to ${p.url} (endpoint ${p.endpoint_id}) have failed ${p.failure_streak} times in a row. They are retried on a backoff of up to 60 minutes; at 15 failures the endpoint is paused.`,
      };
    case 'endpoint_paused':
      return {
        subject: 'Webhook endpoint paused after 15 failed deliveries',
        text: `Deliveries to ${p.url} (endpoint ${p.endpoint_id}) failed 15 times in a row, so the endpoint is paused. Pending deliveries are held for up to 14 days. Fix the receiver, then send a test (POST /api/v1/webhooks/${p.endpoint_id}/test): a 2xx answer resumes delivery.`,
      };
    default:
      return { subject: `Notification: ${kind}`, text: JSON.stringify(p) };
  }
}
