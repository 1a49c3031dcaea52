package kvserve.example;

import io.grpc.CallCredentials;
import io.grpc.Metadata;
import java.util.concurrent.Executor;

/**
 * Sends "authorization: Bearer <token>" with every call (kvserve --auth_token_file). Sent over
 * plaintext too, for loopback and meshes; over any other network use --tls, or it can be sniffed.
 */
final class BearerToken extends CallCredentials {
  private static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);
  private final String token;

  BearerToken(String token) {
    this.token = token;
  }

  @Override
  public void applyRequestMetadata(RequestInfo info, Executor executor, MetadataApplier applier) {
    Metadata headers = new Metadata();
    headers.put(AUTHORIZATION, "Bearer " + token);
    applier.apply(headers);
  }

  @Override
  public void thisUsesUnstableApi() {}
}
