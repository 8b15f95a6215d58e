export { WebhookPlatform, DEFAULT_BASE_URL, SDK_VERSION, parseRetryAfter } from './client.js';
export type {
  Attempt,
  BodyOf,
  ClientOptions,
  CreateEndpoint,
  Delivery,
  DeliveryDetail,
  DeliveryFilter,
  Endpoint,
  EndpointWithSecret,
  ErrorEnvelope,
  EventType,
  Page,
  Paging,
  PublishEvent,
  QueryOf,
  RecoverDeliveries,
  RecoveryResult,
  ResponseOf,
  StreamItem,
  StreamPaging,
  TestResult,
  UpdateEndpoint,
} from './client.js';
export { WebhookPlatformError } from './errors.js';
export { EventStream, type StreamOptions } from './stream.js';
export { ROUTES, type Method, type Route, type RouteName, type Shape } from './routes.js';
export { signatureFor, verifyWebhook } from './verify.js';
export type { components, paths } from './openapi.js';
