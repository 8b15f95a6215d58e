/** OpenAPI paths: The delivery audit list and resend. */
import type { RouteConfig } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { Paging } from '../schemas/common.js';
import { Delivery, DeliveryDetail, DeliveryListQuery } from '../schemas/deliveries.js';
import { auth, errors, json, idParam } from './common.js';

export const deliveryPaths: RouteConfig[] = [
  {
    method: 'get',
    path: '/api/v1/webhook_deliveries',
    summary: 'Delivery audit list, newest first',
    security: auth('webhooks:read'),
    request: { query: DeliveryListQuery },
    responses: { 200: json(z.object({ data: z.array(Delivery), paging: Paging })), ...errors(422) },
  },
  {
    method: 'get',
    path: '/api/v1/webhook_deliveries/{id}',
    summary: 'One delivery with its attempts and the request as signed',
    security: auth('webhooks:read'),
    request: { params: idParam },
    responses: { 200: json(z.object({ data: DeliveryDetail })), ...errors(404) },
  },

  {
    method: 'post',
    path: '/api/v1/webhook_deliveries/{id}/resend',
    summary: 'Resend a limited, exhausted or failed delivery',
    security: auth('webhooks:write'),
    request: { params: idParam },
    responses: { 200: json(z.object({ data: Delivery })), ...errors(404, 409) },
  },
];
