# secure.sh — the secured mode of broker.sh (`broker.sh start --secure`), sourced by it.
#
# On top of the plain single node it adds two client listeners and an authorizer:
#   SASL_SSL://127.0.0.1:<port>  SCRAM-SHA-512 logins (users admin, alice, bob, created at format time
#                                 with `kafka-storage format --add-scram`), TLS with the test CA;
#   MTLS://127.0.0.1:<port>      SSL with ssl.client.auth=required (a client certificate signed by the
#                                 test CA; its principal is User:CN=alice);
#   StandardAuthorizer with allow.everyone.if.no.acl.found=false and super.users=User:admin;User:ANONYMOUS.
# The PLAINTEXT and CONTROLLER listeners stay as they are, on loopback: the controller, the broker's
# own requests and broker.sh's readiness check use them, and their principal is User:ANONYMOUS, which
# is why ANONYMOUS is a super user. So the PLAINTEXT address (STREAMSGROUP_BOOTSTRAP) is an
# unauthenticated super-user door for the tests' set-up, acceptable on loopback of a test machine
# only; the secured addresses are STREAMSGROUP_SECURE_BOOTSTRAP and STREAMSGROUP_MTLS_BOOTSTRAP.
#
# Certificates are made afresh by integration/kafka/certgen (Go's crypto/x509) in $run_dir/tls. The
# env file also gives the CA and store paths, the store passwords and the users' passwords
# (STREAMSGROUP_SCRAM_USERS, STREAMSGROUP_SCRAM_PASSWORD_<user>): test secrets, nothing else.

secure_users="admin alice bob"
secure_trust_pw=trust-secret
secure_broker_pw=broker-secret
secure_client_pw=client-secret

# secure_password prints the test password of user $1.
secure_password() { printf '%s-secret' "$1"; }

# secure_setup extends server.properties and the env file of the node that start() writes (PLAINTEXT
# port $1, controller port $2), and sets format_extra to the --add-scram arguments of the format.
secure_setup() {
	local port=$1 cport=$2 sport mport tls u
	sport=$(free_port)
	while [ "$sport" = "$port" ] || [ "$sport" = "$cport" ]; do sport=$(free_port); done
	mport=$(free_port)
	while [ "$mport" = "$port" ] || [ "$mport" = "$cport" ] || [ "$mport" = "$sport" ]; do mport=$(free_port); done
	tls="$run_dir/tls"
	command -v go >/dev/null || die "Go is needed to make the test certificates (integration/kafka/certgen)"
	(cd "$here/../.." && go run ./integration/kafka/certgen -dir "$tls" -truststore-password "$secure_trust_pw" \
		-broker-password "$secure_broker_pw" -client-password "$secure_client_pw") || die "making the test certificates failed"
	{
		echo "# Secured mode (broker.sh start --secure, see secure.sh): these override the listeners above."
		echo "listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport,SASL_SSL://127.0.0.1:$sport,MTLS://127.0.0.1:$mport"
		echo "advertised.listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport,SASL_SSL://127.0.0.1:$sport,MTLS://127.0.0.1:$mport"
		echo "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,MTLS:SSL"
		echo "sasl.enabled.mechanisms=SCRAM-SHA-512"
		echo "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;"
		echo "ssl.keystore.type=PKCS12"
		echo "ssl.keystore.location=$tls/broker-keystore.p12"
		echo "ssl.keystore.password=$secure_broker_pw"
		echo "ssl.key.password=$secure_broker_pw"
		echo "ssl.truststore.type=PKCS12"
		echo "ssl.truststore.location=$tls/broker-truststore.p12"
		echo "ssl.truststore.password=$secure_trust_pw"
		echo "listener.name.mtls.ssl.client.auth=required"
		echo "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
		echo "allow.everyone.if.no.acl.found=false"
		echo "super.users=User:admin;User:ANONYMOUS"
	} >>"$run_dir/server.properties"
	# STREAMSGROUP_BROKER_EXTRA still has the last word.
	append_extra_properties "$run_dir/server.properties"
	format_extra=()
	for u in $secure_users; do
		format_extra+=(--add-scram "SCRAM-SHA-512=[name=$u,password=$(secure_password "$u")]")
	done
	{
		echo "STREAMSGROUP_SECURE_BOOTSTRAP=127.0.0.1:$sport"
		echo "STREAMSGROUP_MTLS_BOOTSTRAP=127.0.0.1:$mport"
		echo "STREAMSGROUP_TLS_DIR=$tls"
		echo "STREAMSGROUP_CA_PEM=$tls/ca.pem"
		echo "STREAMSGROUP_UNKNOWN_CA_PEM=$tls/unknown-ca.pem"
		echo "STREAMSGROUP_TRUSTSTORE_P12=$tls/truststore.p12"
		echo "STREAMSGROUP_TRUSTSTORE_PASSWORD=$secure_trust_pw"
		echo "STREAMSGROUP_CLIENT_P12=$tls/client.p12"
		echo "STREAMSGROUP_CLIENT_P12_PASSWORD=$secure_client_pw"
		echo "STREAMSGROUP_CLIENT_PEM=$tls/client.pem"
		echo "STREAMSGROUP_SASL_MECHANISM=SCRAM-SHA-512"
		echo "STREAMSGROUP_SCRAM_USERS=\"$secure_users\""
		for u in $secure_users; do echo "STREAMSGROUP_SCRAM_PASSWORD_$u=$(secure_password "$u")"; done
	} >>"$run_dir/env"
}
