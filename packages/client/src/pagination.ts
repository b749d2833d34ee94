/** A page of an offset-paginated list, as Tollgate answers it. */
export interface OffsetPage<Item> {
  readonly data: Item[];
  readonly pagination: { readonly total: number; readonly limit: number; readonly offset: number };
}

/**
 * What a `list()` returns, as Stripe's clients do: `await` it for one page (`data`, `pagination`), or
 * `for await` over it for every item of every page from there on, each page fetched when reached. Nothing
 * is requested until it is awaited or iterated.
 */
export class PagePromise<Item, Page extends OffsetPage<Item> = OffsetPage<Item>>
  implements PromiseLike<Page>, AsyncIterable<Item>
{
  readonly #fetchPage: (offset: number | undefined) => Promise<Page>;
  #first: Promise<Page> | undefined;
  readonly [Symbol.toStringTag] = 'PagePromise';

  /** `fetchPage(undefined)` is the page asked for; `fetchPage(n)` the one starting at offset n. */
  constructor(fetchPage: (offset: number | undefined) => Promise<Page>) {
    this.#fetchPage = fetchPage;
  }

  #firstPage(): Promise<Page> {
    this.#first ??= this.#fetchPage(undefined);
    return this.#first;
  }

  // biome-ignore lint/suspicious/noThenProperty: awaitable by design, as Stripe's list promises are.
  then<A = Page, B = never>(
    onFulfilled?: ((page: Page) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.#firstPage().then(onFulfilled, onRejected);
  }

  catch<B = never>(onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<Page | B> {
    return this.#firstPage().catch(onRejected);
  }

  finally(onFinally?: (() => void) | null): Promise<Page> {
    return this.#firstPage().finally(onFinally);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Item> {
    let page = await this.#firstPage();
    for (;;) {
      yield* page.data;
      const next = page.pagination.offset + page.data.length;
      if (page.data.length === 0 || next >= page.pagination.total) return;
      page = await this.#fetchPage(next);
    }
  }

  /** Every item from the first page on, gathered into one array (mind the list's size). */
  async toArray(): Promise<Item[]> {
    const items: Item[] = [];
    for await (const item of this) items.push(item);
    return items;
  }
}
