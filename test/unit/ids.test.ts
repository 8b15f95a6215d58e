import { describe, expect, it } from 'vitest';
import type { AccountId, EndpointId } from '../../src/core/ids.js';
import type { DueEndpoint } from '../../src/db/due-notifications.js';
import type { EndpointWorkflows } from '../../src/delivery/workflow-client.js';

/** `npm test` type-checks this file: each @ts-expect-error fails the build if the line it marks compiles. */
describe('branded ids', () => {
  it('refuse an endpoint id and an Account id swapped, or a bare string, where both travel together', () => {
    const endpointId = 'e1' as EndpointId;
    const accountId = 'a1' as AccountId;
    const sent: string[][] = [];
    const workflows: Pick<EndpointWorkflows, 'wake'> = { wake: async (e, a) => void sent.push([e, a]) };
    void workflows.wake(endpointId, accountId);
    // @ts-expect-error the Account's id where the endpoint's goes
    void workflows.wake(accountId, endpointId);
    // @ts-expect-error a string of unknown kind
    const due: DueEndpoint = { endpointId: 'e2', accountId };
    expect(sent[0]).toEqual(['e1', 'a1']);
    expect(due.accountId).toBe('a1');
  });
});
