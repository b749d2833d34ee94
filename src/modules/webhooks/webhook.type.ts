import { GraphQLDateTimeISO, GraphQLJSONObject } from 'graphql-scalars';
import { Field, ID, InputType, Int, ObjectType } from 'type-graphql';
import type { WebhookAttempt, WebhookDelivery } from './webhook-delivery.entity.js';
import { presentDelivery, type WebhookEndpointView } from './webhooks.presenter.js';

@ObjectType('WebhookEndpoint', { description: "Where an app's events are delivered (Standard Webhooks)" })
export class WebhookEndpointType {
  @Field(() => ID)
  id!: string;
  @Field()
  url!: string;
  @Field(() => [String], { description: 'Event types delivered here; empty means every type' })
  events!: string[];
  @Field()
  enabled!: boolean;
  @Field(() => String, { nullable: true })
  description!: string | null;
  @Field(() => GraphQLDateTimeISO)
  createdAt!: Date;
  @Field(() => GraphQLDateTimeISO)
  updatedAt!: Date;

  static from(view: WebhookEndpointView): WebhookEndpointType {
    return Object.assign(new WebhookEndpointType(), {
      ...view,
      events: [...view.events],
      createdAt: new Date(view.createdAt),
      updatedAt: new Date(view.updatedAt),
    });
  }
}

@ObjectType('WebhookEndpointWithSecret')
export class WebhookEndpointWithSecretType {
  @Field(() => WebhookEndpointType)
  endpoint!: WebhookEndpointType;
  @Field({ description: 'The signing secret (`whsec_…`): shown this once, keep it' })
  secret!: string;
}

@ObjectType('WebhookAttempt')
export class WebhookAttemptType {
  @Field(() => GraphQLDateTimeISO)
  attemptedAt!: Date;
  @Field(() => Int, { nullable: true, description: 'The HTTP status; null when no answer came' })
  statusCode!: number | null;
  @Field(() => Int)
  durationMs!: number;
  @Field(() => GraphQLJSONObject, {
    nullable: true,
    description: "The headers of the attempt's request (its signature included); null when none was made",
  })
  requestHeaders!: Record<string, string> | null;
  @Field({ description: 'The start of the answer, or why there was none' })
  excerpt!: string;
}

@ObjectType('WebhookDelivery')
export class WebhookDeliveryType {
  @Field(() => ID)
  id!: string;
  @Field(() => ID)
  endpointId!: string;
  @Field(() => ID, { description: 'The `webhook-id` header, the same on every attempt' })
  eventId!: string;
  @Field()
  eventType!: string;
  @Field({ description: '`pending`, `succeeded` or `failed`' })
  status!: string;
  @Field(() => Int)
  attempts!: number;
  @Field(() => GraphQLDateTimeISO, { nullable: true })
  nextAttemptAt!: Date | null;
  @Field(() => GraphQLDateTimeISO)
  createdAt!: Date;
  @Field(() => GraphQLDateTimeISO)
  updatedAt!: Date;
  @Field({ description: 'The JSON body every attempt sends (and signs), as sent' })
  requestBody!: string;
  @Field(() => [WebhookAttemptType], { description: 'The latest attempts, newest first' })
  attemptLog!: WebhookAttemptType[];

  /** Needs `event` loaded; the request's body and headers are GraphQL's (the REST shape has neither). */
  static from(delivery: WebhookDelivery, attempts: readonly WebhookAttempt[]): WebhookDeliveryType {
    const view = presentDelivery(delivery, attempts);
    return Object.assign(new WebhookDeliveryType(), {
      ...view,
      requestBody: delivery.event.body,
      nextAttemptAt: view.nextAttemptAt ? new Date(view.nextAttemptAt) : null,
      createdAt: new Date(view.createdAt),
      updatedAt: new Date(view.updatedAt),
      attemptLog: view.attemptLog.map((a, i) =>
        Object.assign(new WebhookAttemptType(), {
          ...a,
          attemptedAt: new Date(a.attemptedAt),
          requestHeaders: attempts[i]?.requestHeaders ?? null,
        }),
      ),
    });
  }
}

@InputType('CreateWebhookEndpointInput')
export class CreateWebhookEndpointInput {
  @Field(() => ID, {
    nullable: true,
    description: 'Required with the admin token; an API key acts on its own app',
  })
  appId?: string | null;
  @Field()
  url!: string;
  @Field(() => [String], { nullable: true, description: 'Empty or absent: every event type' })
  events?: string[] | null;
  @Field(() => String, { nullable: true })
  description?: string | null;
}

@InputType('UpdateWebhookEndpointInput')
export class UpdateWebhookEndpointInput {
  @Field({ nullable: true })
  url?: string;
  @Field(() => [String], { nullable: true })
  events?: string[] | null;
  @Field(() => String, { nullable: true })
  description?: string | null;
  @Field({ nullable: true })
  enabled?: boolean;
}
