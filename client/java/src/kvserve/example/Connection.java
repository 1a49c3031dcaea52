package kvserve.example;

import io.grpc.ManagedChannel;
import io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.NettyChannelBuilder;
import io.netty.handler.ssl.SslContextBuilder;
import java.io.File;
import javax.net.ssl.SSLException;

/** The channel to the server: plaintext, or TLS with optional roots, name and client certificate. */
final class Connection {
  private Connection() {}

  static ManagedChannel open(Flags flags) throws SSLException {
    NettyChannelBuilder builder = NettyChannelBuilder.forTarget(flags.target);
    if (!flags.tls) {
      return builder.usePlaintext().build();
    }
    SslContextBuilder ssl = GrpcSslContexts.forClient();
    if (!flags.tlsCa.isEmpty()) {
      ssl.trustManager(new File(flags.tlsCa)); // else the JDK's default roots
    }
    if (flags.tlsClientCert.isEmpty() != flags.tlsClientKey.isEmpty()) {
      throw new IllegalArgumentException("--tls-client-cert and --tls-client-key go together");
    }
    if (!flags.tlsClientCert.isEmpty()) {
      ssl.keyManager(new File(flags.tlsClientCert), new File(flags.tlsClientKey));
    }
    builder.sslContext(ssl.build());
    if (!flags.tlsServerName.isEmpty()) {
      builder.overrideAuthority(flags.tlsServerName);
    }
    return builder.build();
  }
}
