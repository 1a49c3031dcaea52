# frozen_string_literal: true

require 'grpc'

# How the Ruby example reaches the server: plaintext or TLS (optional roots,
# server name and client certificate), and the bearer token of a server
# started with --auth_token_file (docs/security.md).
module KvserveConnection
  def self.add_options(parser, options)
    parser.on('--tls', 'connect with TLS') { options[:tls] = true }
    parser.on('--tls-ca FILE', "PEM root certificates for --tls (default: the system's)") do |v|
      options[:tls_ca] = v
    end
    parser.on('--tls-server-name NAME', "expected name in the server's certificate") do |v|
      options[:tls_server_name] = v
    end
    parser.on('--tls-client-cert FILE', 'PEM client certificate (mutual TLS)') do |v|
      options[:tls_client_cert] = v
    end
    parser.on('--tls-client-key FILE', 'PEM private key of --tls-client-cert') do |v|
      options[:tls_client_key] = v
    end
    parser.on('--auth-token-file FILE', 'file holding the bearer token') do |v|
      options[:auth_token_file] = v
    end
    parser.on('--auth-token TOKEN',
              'bearer token (prefer --auth-token-file or $KVSERVE_AUTH_TOKEN: ps shows flags)') do |v|
      options[:auth_token] = v
    end
  end

  # The stub's credentials and its keyword arguments:
  #   Stub.new(target, credentials, **keywords)
  def self.credentials(options)
    return [:this_channel_is_insecure, {}] unless options[:tls]

    if options[:tls_client_cert].nil? != options[:tls_client_key].nil?
      abort('error: --tls-client-cert and --tls-client-key go together')
    end
    read = ->(path) { path && File.read(path) }
    credentials = GRPC::Core::ChannelCredentials.new(
      read.call(options[:tls_ca]), read.call(options[:tls_client_key]),
      read.call(options[:tls_client_cert])
    )
    channel_args = {}
    channel_args['grpc.ssl_target_name_override'] = options[:tls_server_name] if options[:tls_server_name]
    [credentials, { channel_args: channel_args }]
  end

  # Like kvserve-cli: --auth-token-file (its first line that is not blank or a
  # # comment), else --auth-token, else $KVSERVE_AUTH_TOKEN. Sent over
  # plaintext too (loopback, meshes); elsewhere use --tls or it can be sniffed.
  def self.metadata(options)
    token = if options[:auth_token_file]
              File.readlines(options[:auth_token_file]).map(&:strip)
                  .find { |line| !line.empty? && !line.start_with?('#') } ||
                abort("error: --auth-token-file: no token in #{options[:auth_token_file]}")
            else
              (options[:auth_token] || ENV.fetch('KVSERVE_AUTH_TOKEN', '')).strip
            end
    token.empty? ? {} : { 'authorization' => "Bearer #{token}" }
  end
end
