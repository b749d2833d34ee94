import { Arg, Ctx, FieldResolver, ID, Mutation, Query, Resolver, Root } from 'type-graphql';
import type { GraphQLContext } from '../../graphql/context.js';
import {
  ApiKeyType,
  AppSettingsInput,
  AppType,
  CreateApiKeyPayload,
  CreateAppInput,
  CreateAppPayload,
} from './app.type.js';

/** Admin operations on apps and API keys (admin token only; enforced in AppsService). */
@Resolver(() => AppType)
export class AppsResolver {
  @Query(() => [AppType])
  async apps(@Ctx() ctx: GraphQLContext): Promise<AppType[]> {
    return (await ctx.services.apps.listApps(ctx.principal)).map(AppType.from);
  }

  @Query(() => AppType, { nullable: true })
  async app(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext): Promise<AppType | null> {
    const app = await ctx.services.apps.getApp(ctx.principal, id);
    return app ? AppType.from(app) : null;
  }

  @FieldResolver(() => [ApiKeyType])
  async apiKeys(@Root() app: AppType, @Ctx() ctx: GraphQLContext): Promise<ApiKeyType[]> {
    return (await ctx.services.apps.listApiKeys(ctx.principal, app.id)).map(ApiKeyType.from);
  }

  @Mutation(() => CreateAppPayload)
  async createApp(@Arg('input', () => CreateAppInput) input: CreateAppInput, @Ctx() ctx: GraphQLContext) {
    const { app, apiKey } = await ctx.services.apps.createApp(ctx.principal, { ...input });
    return Object.assign(new CreateAppPayload(), { app: AppType.from(app), apiKey: apiKey.secret });
  }

  @Mutation(() => AppType)
  async updateAppSettings(
    @Arg('appId', () => ID) appId: string,
    @Arg('input', () => AppSettingsInput) input: AppSettingsInput,
    @Ctx() ctx: GraphQLContext,
  ): Promise<AppType> {
    return AppType.from(await ctx.services.apps.updateAppSettings(ctx.principal, appId, { ...input }));
  }

  @Mutation(() => CreateApiKeyPayload)
  async createApiKey(@Arg('appId', () => ID) appId: string, @Ctx() ctx: GraphQLContext) {
    const { secret, key } = await ctx.services.apps.createApiKey(ctx.principal, appId);
    return Object.assign(new CreateApiKeyPayload(), { apiKey: secret, key: ApiKeyType.from(key) });
  }

  @Mutation(() => ApiKeyType)
  async revokeApiKey(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext): Promise<ApiKeyType> {
    return ApiKeyType.from(await ctx.services.apps.revokeApiKey(ctx.principal, id));
  }
}
