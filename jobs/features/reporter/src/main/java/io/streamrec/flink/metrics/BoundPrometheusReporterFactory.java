package io.streamrec.flink.metrics;

import org.apache.flink.metrics.reporter.MetricReporter;
import org.apache.flink.metrics.reporter.MetricReporterFactory;
import org.apache.flink.util.PortRange;

import java.util.Properties;

/**
 * Flink's Prometheus reporter on one address: {@code host} (default 127.0.0.1) and
 * {@code port} (a port or a range such as 9250-9260, default 9249), as in
 * <pre>
 * metrics.reporter.prom.factory.class: io.streamrec.flink.metrics.BoundPrometheusReporterFactory
 * metrics.reporter.prom.host: 127.0.0.1
 * metrics.reporter.prom.port: 9249
 * </pre>
 * Flink's own {@code PrometheusReporterFactory} has no host option: it binds every interface.
 */
public class BoundPrometheusReporterFactory implements MetricReporterFactory {

    static final String ARG_HOST = "host";
    static final String ARG_PORT = "port";
    static final String DEFAULT_HOST = "127.0.0.1";
    static final String DEFAULT_PORT = "9249";

    @Override
    public MetricReporter createMetricReporter(Properties properties) {
        String host = properties.getProperty(ARG_HOST, DEFAULT_HOST);
        String ports = properties.getProperty(ARG_PORT, DEFAULT_PORT);
        return new BoundPrometheusReporter(host, new PortRange(ports));
    }
}
