import { Arg, Ctx, ID, Int, Mutation, Query, Resolver } from 'type-graphql';
import { sentArgs } from '../../graphql/args.js';
import type { GraphQLContext } from '../../graphql/context.js';
import {
  CreateWebhookEndpointInput,
  UpdateWebhookEndpointInput,
  WebhookDeliveryType,
  WebhookEndpointType,
  WebhookEndpointWithSecretType,
} from './webhook.type.js';
import { presentEndpoint } from './webhooks.presenter.js';
import type { EndpointWithSecret, WebhooksService } from './webhooks.service.js';

function withSecret({ endpoint, secret }: EndpointWithSecret): WebhookEndpointWithSecretType {
  return Object.assign(new WebhookEndpointWithSecretType(), {
    endpoint: WebhookEndpointType.from(presentEndpoint(endpoint)),
    secret,
  });
}

/** Webhook endpoints and deliveries (rules and permissions in WebhooksService). */
@Resolver(() => WebhookEndpointType)
export class WebhooksResolver {
  constructor(private readonly webhooks: WebhooksService) {}

  @Mutation(() => WebhookEndpointWithSecretType, {
    description: 'Creates an endpoint; its signing secret is returned this once',
  })
  async createWebhookEndpoint(
    @Arg('input', () => CreateWebhookEndpointInput) input: CreateWebhookEndpointInput,
    @Ctx() ctx: GraphQLContext,
  ): Promise<WebhookEndpointWithSecretType> {
    const { appId, url, events, description } = input;
    return withSecret(
      await this.webhooks.createEndpoint(ctx.principal, {
        ...sentArgs({ appId, url, events }),
        ...(description !== undefined ? { description } : {}),
      }),
    );
  }

  @Mutation(() => WebhookEndpointType)
  async updateWebhookEndpoint(
    @Arg('id', () => ID) id: string,
    @Arg('input', () => UpdateWebhookEndpointInput) input: UpdateWebhookEndpointInput,
    @Ctx() ctx: GraphQLContext,
  ): Promise<WebhookEndpointType> {
    const { url, events, description, enabled } = input;
    const endpoint = await this.webhooks.updateEndpoint(ctx.principal, id, {
      ...sentArgs({ url, enabled }),
      // null means something here: no description, every event type.
      ...(events !== undefined ? { events } : {}),
      ...(description !== undefined ? { description } : {}),
    });
    return WebhookEndpointType.from(presentEndpoint(endpoint));
  }

  @Mutation(() => WebhookEndpointType, { description: 'Deletes the endpoint and its deliveries' })
  async deleteWebhookEndpoint(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: GraphQLContext,
  ): Promise<WebhookEndpointType> {
    return WebhookEndpointType.from(presentEndpoint(await this.webhooks.deleteEndpoint(ctx.principal, id)));
  }

  @Mutation(() => WebhookEndpointWithSecretType, {
    description:
      'A new signing secret (returned this once); the previous one keeps signing beside it for 24 h',
  })
  async rotateWebhookEndpointSecret(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: GraphQLContext,
  ): Promise<WebhookEndpointWithSecretType> {
    return withSecret(await this.webhooks.rotateSecret(ctx.principal, id));
  }

  @Query(() => [WebhookEndpointType], {
    description: "The app's webhook endpoints; `appId` is required with the admin token only",
  })
  async webhookEndpoints(
    @Ctx() ctx: GraphQLContext,
    @Arg('appId', () => ID, { nullable: true }) appId?: string | null,
  ): Promise<WebhookEndpointType[]> {
    const endpoints = await this.webhooks.listEndpoints(ctx.principal, appId ?? undefined);
    return endpoints.map((endpoint) => WebhookEndpointType.from(presentEndpoint(endpoint)));
  }

  @Query(() => [WebhookDeliveryType], { description: "An endpoint's deliveries, newest first" })
  async webhookDeliveries(
    @Arg('endpointId', () => ID) endpointId: string,
    @Ctx() ctx: GraphQLContext,
    @Arg('limit', () => Int, { nullable: true }) limit?: number | null,
  ): Promise<WebhookDeliveryType[]> {
    const deliveries = await this.webhooks.listDeliveries(ctx.principal, endpointId, sentArgs({ limit }));
    return deliveries.map((d) => WebhookDeliveryType.from(d.delivery, d.attempts));
  }

  @Mutation(() => WebhookDeliveryType, { description: 'Sends a settled delivery again, once, now' })
  async retryWebhookDelivery(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: GraphQLContext,
  ): Promise<WebhookDeliveryType> {
    const { delivery, attempts } = await this.webhooks.retryDelivery(ctx.principal, id);
    return WebhookDeliveryType.from(delivery, attempts);
  }

  @Mutation(() => WebhookDeliveryType, {
    description:
      'Sends the endpoint a `webhook.test` event now, delivered like any other, whatever types it takes',
  })
  async sendWebhookTestEvent(
    @Arg('id', () => ID, { description: 'The endpoint' }) id: string,
    @Ctx() ctx: GraphQLContext,
  ): Promise<WebhookDeliveryType> {
    const { delivery, attempts } = await this.webhooks.sendTestEvent(ctx.principal, id);
    return WebhookDeliveryType.from(delivery, attempts);
  }
}
