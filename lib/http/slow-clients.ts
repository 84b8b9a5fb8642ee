/**
 * Slow clients (slowloris) get 10 s to send headers, 30 s for the whole request, and 5 s between
 * requests: the options of both HTTP servers, the platform's and the bridge's. Node enforces the
 * first two only when it checks its connections, every 30 s by default: a slow client would get
 * up to 40 s instead of 10. Checking each second keeps them.
 */
export const SLOW_CLIENT_LIMITS = { headersTimeout: 10_000, requestTimeout: 30_000, keepAliveTimeout: 5_000, connectionsCheckingInterval: 1_000 } as const
