import { INestApplication } from '@nestjs/common';

export interface ServedRoute {
  method: string;
  path: string;
}

/** What Express actually serves: every route layer on the app's router (Express 5: `app.router`). */
export function expressRoutes(app: INestApplication): ServedRoute[] {
  const stack: { route?: { path: string; methods: Record<string, boolean> } }[] =
    app.getHttpAdapter().getInstance().router.stack;
  return stack.flatMap((layer) =>
    layer.route
      ? Object.keys(layer.route.methods).map((method) => ({
          method: method === '_all' ? 'ALL' : method.toUpperCase(),
          path: layer.route!.path,
        }))
      : [],
  );
}
