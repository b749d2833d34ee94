import { Arg, Ctx, FieldResolver, ID, Mutation, Query, Resolver, Root } from 'type-graphql';
import { sentArgs } from '../../graphql/args.js';
import type { GraphQLContext } from '../../graphql/context.js';
import {
  ApiKeyType,
  AppSettingsInput,
  AppType,
  CallbackUrlCheckType,
  CreateApiKeyPayload,
  CreateAppInput,
  CreateAppPayload,
} from './app.type.js';
import type { AppsService } from './apps.service.js';

/**
 * Operations on apps and API keys, enforced in AppsService: the admin token for all of them; an API key
 * may read its own app (not its keys) and test URLs against its patterns.
 */
@Resolver(() => AppType)
export class AppsResolver {
  constructor(private readonly appsService: AppsService) {}

  @Query(() => [AppType])
  async apps(@Ctx() ctx: GraphQLContext): Promise<AppType[]> {
    return (await this.appsService.listApps(ctx.principal)).map(AppType.from);
  }

  @Query(() => AppType, {
    nullable: true,
    description:
      'An app: the admin token names any; an API key may leave `id` out or name its own app (another → null)',
  })
  async app(
    @Ctx() ctx: GraphQLContext,
    @Arg('id', () => ID, { nullable: true }) id?: string | null,
  ): Promise<AppType | null> {
    const app = await this.appsService.getApp(ctx.principal, id);
    return app ? AppType.from(app) : null;
  }

  @Query(() => CallbackUrlCheckType, {
    description:
      "Whether a callback URL is allowed by the app's patterns, and by which (the login flow's matcher)",
  })
  async checkCallbackUrl(
    @Arg('appId', () => ID) appId: string,
    @Arg('url') url: string,
    @Ctx() ctx: GraphQLContext,
  ): Promise<CallbackUrlCheckType> {
    return CallbackUrlCheckType.from(await this.appsService.checkCallbackUrl(ctx.principal, appId, url));
  }

  @FieldResolver(() => [ApiKeyType], { description: 'Admin token only' })
  async apiKeys(@Root() app: AppType, @Ctx() ctx: GraphQLContext): Promise<ApiKeyType[]> {
    return (await this.appsService.listApiKeys(ctx.principal, app.id)).map(ApiKeyType.from);
  }

  @Mutation(() => CreateAppPayload)
  async createApp(@Arg('input', () => CreateAppInput) input: CreateAppInput, @Ctx() ctx: GraphQLContext) {
    const { app, apiKey } = await this.appsService.createApp(ctx.principal, { ...input });
    return Object.assign(new CreateAppPayload(), { app: AppType.from(app), apiKey: apiKey.secret });
  }

  @Mutation(() => AppType)
  async updateAppSettings(
    @Arg('appId', () => ID) appId: string,
    @Arg('input', () => AppSettingsInput) input: AppSettingsInput,
    @Ctx() ctx: GraphQLContext,
  ): Promise<AppType> {
    return AppType.from(await this.appsService.updateAppSettings(ctx.principal, appId, { ...input }));
  }

  @Mutation(() => CreateApiKeyPayload)
  async createApiKey(
    @Arg('appId', () => ID) appId: string,
    @Ctx() ctx: GraphQLContext,
    @Arg('name', () => String, { nullable: true, description: 'What the key is for; absent: unnamed' })
    name?: string | null,
  ) {
    const { secret, key } = await this.appsService.createApiKey(ctx.principal, appId, sentArgs({ name }));
    return Object.assign(new CreateApiKeyPayload(), { apiKey: secret, key: ApiKeyType.from(key) });
  }

  @Mutation(() => ApiKeyType)
  async revokeApiKey(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext): Promise<ApiKeyType> {
    return ApiKeyType.from(await this.appsService.revokeApiKey(ctx.principal, id));
  }
}
