import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * Custom search attributes of the endpoint workflow, so operators can filter in the
 * Temporal Web UI (e.g. `EndpointHealth = "paused"`). Registered on the dev server at
 * start and by the worker on a real cluster.
 */
export const AccountIdAttribute = defineSearchAttributeKey('AccountId', SearchAttributeType.KEYWORD);
export const EndpointHealthAttribute = defineSearchAttributeKey('EndpointHealth', SearchAttributeType.KEYWORD);
export const FailureStreakAttribute = defineSearchAttributeKey('FailureStreak', SearchAttributeType.INT);

export const customSearchAttributes = [AccountIdAttribute, EndpointHealthAttribute, FailureStreakAttribute];
