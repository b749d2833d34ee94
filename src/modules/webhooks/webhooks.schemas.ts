import { z } from 'zod';
import { paginationSchema } from '../../core/pagination.js';
import { absoluteUrlSchema, idSchema } from '../../core/validation.js';
import { isWebhookEventType, WEBHOOK_EVENT_TYPES } from './webhook-event-types.js';

/** Endpoints an app may have (Tollgate's choice). */
export const MAX_ENDPOINTS_PER_APP = 20;

const eventsSchema = z
  .array(z.string().max(100, 'must be at most 100 characters'))
  .max(WEBHOOK_EVENT_TYPES.length, `must list at most ${WEBHOOK_EVENT_TYPES.length} event types`)
  .superRefine((events, ctx) => {
    const unknown = events.filter((event) => !isWebhookEventType(event));
    if (unknown.length > 0) {
      ctx.addIssue({
        code: 'custom',
        message: `unknown event type${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')} (known: ${WEBHOOK_EVENT_TYPES.join(', ')})`,
      });
    }
  })
  .transform((events) => [...new Set(events)]);

const descriptionSchema = z.string().max(500, 'must be at most 500 characters').nullable();

export const createEndpointSchema = z.strictObject({
  appId: idSchema.nullish(),
  url: absoluteUrlSchema,
  events: eventsSchema.nullish(),
  description: descriptionSchema.optional(),
});

export const updateEndpointSchema = z.strictObject({
  url: absoluteUrlSchema.optional(),
  events: eventsSchema.nullish(),
  description: descriptionSchema.optional(),
  enabled: z.boolean().optional(),
});

export const listDeliveriesSchema = z.strictObject({
  limit: paginationSchema.limit,
});
